"""`memsift bench`: benchmarks that print numbers.

Replays of conversation and retrieval files live in memsift.bench.replay; each other
benchmark has its own module in memsift.bench and its own flag here.
"""

from __future__ import annotations

import click


@click.command("bench")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--baseline", is_flag=True, help="Also replay what the official Cognee plugin does.")
@click.option("--longterm", type=click.Choice(["embedded", "cognee"]), default="embedded",
              show_default=True, help="Where the long-term memory lives during the replay.")
@click.option("--judge", "judge_bench", is_flag=True,
              help="The decision model on its held-out labelled set, and the hook's speed.")
@click.option("--keep", "keep_bench", is_flag=True,
              help="The session-end keep decision on the corpus's validation sessions.")
@click.option("--session-end", "session_end", is_flag=True,
              help="Replay FILES through the real SessionEnd hook and list the notes written.")
@click.option("--horizon", "horizon_bench", is_flag=True,
              help="60 simulated days: corrections, rules, fading, reinforcement.")
@click.option("--load", "load_bench", is_flag=True,
              help="20 hook processes at once, then 2,000 prompts in a row.")
@click.option("--scale", "scale_bench", is_flag=True,
              help="The prompt path with 50 notes against 10,000.")
@click.option("--fanout", "fanout_bench", is_flag=True,
              help="The prompt path's wait with a remote judge answering in 0.3 s.")
@click.option("--judge-backend", default="", metavar="NAME",
              type=click.Choice(["", "local", "systemone", "openai-decisions", "chat"]),
              help="Replay FILES with this decision model (as configured) and the local one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def bench(files: tuple[str, ...], baseline: bool, longterm: str, judge_bench: bool,
          keep_bench: bool, session_end: bool, horizon_bench: bool, load_bench: bool, scale_bench: bool,
          fanout_bench: bool, judge_backend: str, as_json: bool) -> None:
    """Replay FILES (conversations or retrieval files) through the real hook and print
    found, added for nothing, characters and wait; or run the benchmarks the flags name."""
    failed = False
    if judge_bench:
        from memsift.bench.judge import main as judge_main

        judge_main(as_json=as_json)
    if keep_bench:
        from memsift.bench.keep import main as keep_main

        keep_main(as_json=as_json)
    if horizon_bench:
        from memsift.bench.horizon import main as horizon_main

        horizon_main(as_json=as_json)
    if load_bench:
        from memsift.bench.load import main as load_main

        failed |= load_main(as_json=as_json) != 0
    if scale_bench:
        import json

        from memsift.bench.scale import main as scale_main

        print(json.dumps(scale_main(), indent=1))
    if fanout_bench:
        from memsift.bench.fanout import main as fanout_main

        failed |= fanout_main(as_json=as_json) != 0
    if session_end:
        if not files:
            raise click.UsageError("--session-end replays FILES: give the files")
        from memsift.bench.keep import main_session_end, read_conversations

        loaded, bad = read_conversations(list(files))
        if bad:
            raise click.UsageError("--session-end replays conversation files (a list of "
                                   f"turns), and these are not: {', '.join(bad)}")
        main_session_end(loaded, as_json=as_json)
    elif files:
        from memsift.bench.replay import main as replay_main

        replay_main(list(files), baseline=baseline, longterm=longterm, as_json=as_json,
                    judge_backend=judge_backend)
    elif judge_backend:
        raise click.UsageError("--judge-backend replays FILES: give the files")
    if not (files or judge_bench or keep_bench or horizon_bench or load_bench or scale_bench
            or fanout_bench):
        raise click.UsageError("give benchmark FILES, or one of --judge --keep --horizon "
                               "--load --scale --fanout")
    if failed:
        raise SystemExit(1)


COMMANDS = [bench]
