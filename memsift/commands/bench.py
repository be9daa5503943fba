"""`memsift bench`: benchmarks that print numbers.

Replays of conversation and retrieval files live in memsift.bench.replay; the decision-model
benchmark (`--judge`) in memsift.bench.judge.
"""

from __future__ import annotations

import click


@click.command("bench")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--baseline", is_flag=True, help="Also replay what the official Cognee plugin does.")
@click.option("--judge", "judge_bench", is_flag=True,
              help="Benchmark the decision model on its held-out labelled set.")
@click.option("--longterm", type=click.Choice(["embedded", "cognee"]), default="embedded",
              show_default=True, help="Where the long-term memory lives during the replay.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def bench(files: tuple[str, ...], baseline: bool, judge_bench: bool, longterm: str,
          as_json: bool) -> None:
    """Replay FILES (conversations or retrieval files) through the real hook and print
    found, added for nothing, characters and wait."""
    if judge_bench:
        from memsift.bench.judge import main as judge_main

        judge_main(as_json=as_json)
    if files:
        from memsift.bench.replay import main as replay_main

        replay_main(list(files), baseline=baseline, longterm=longterm, as_json=as_json)
    if not files and not judge_bench:
        raise click.UsageError("give benchmark FILES, or --judge")


COMMANDS = [bench]
