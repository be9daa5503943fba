"""The benchmarks of a remote decision model, against the System One stand-in on 127.0.0.1:
the prompt path's wait with every item judged at once (`memsift bench --fanout`), and a replay
of the same files with a configured backend beside the local judge (`--judge-backend`)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memsift.bench.fanout import LATENCY_S, NOTES, PASSAGES, run
from memsift.bench.systemone_server import SystemOneServer
from memsift.cli import cli

DATA = Path(__file__).parent / "data"
PROMPTS = 4  # fresh hook processes; the benchmark itself runs 20
# One round trip is 0.3 s; the 29 requests one after another would be 8.7 s. On a loaded
# two-core test machine the wait is well over the benchmark's quiet-machine 0.65 s but
# nowhere near a sum of round trips.
CONCURRENT_BOUND_S = 6 * LATENCY_S


def test_a_prompt_judges_every_note_and_passage_at_once():
    report = run(prompts=PROMPTS)
    assert report["requests_per_prompt"] == 1 + NOTES + PASSAGES
    assert report["answer_added"] == PROMPTS  # the one answering passage, every time
    assert report["errors"] == []
    assert report["wait_p95_s"] < CONCURRENT_BOUND_S < report["one_after_another_s"]


def test_a_replay_with_a_backend_runs_the_local_judge_beside_it(monkeypatch):
    with SystemOneServer(api_key="k") as server:
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", server.url)
        monkeypatch.setenv("MEMSIFT_JUDGE_API_KEY", "k")
        result = CliRunner().invoke(cli, ["bench", "--judge-backend", "systemone", "--json",
                                          str(DATA / "tiny_conversation.json")])
        asked = len(server.decisions())
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    modes = [c["mode"] for c in report["conversations"]]
    assert modes == ["systemone", "local"] and set(report["total"]) == {"systemone", "local"}
    assert asked > 0  # the configured backend really judged its rows


def test_judge_backend_needs_files():
    result = CliRunner().invoke(cli, ["bench", "--judge-backend", "systemone"])
    assert result.exit_code != 0 and "FILES" in result.output
