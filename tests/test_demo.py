"""`memsift demo`: the sample session through the real hook, in a home of its own."""

from __future__ import annotations

import os

from memsift.audit import read_audit
from memsift.commands.demo_run import load_sample, run_demo


def test_the_sample_project_loads_with_ids_and_dates():
    sample = load_sample()
    assert sample["notes"] and sample["memory"] and sample["turns"]
    assert all(n["id"] and n["written"] for n in sample["notes"])


def test_the_demo_replays_every_message_and_leaves_the_users_memory_alone(tmp_path, capsys,
                                                                         isolated_env):
    rows = run_demo(tmp_path / "demo")
    out = capsys.readouterr().out
    assert len(rows) == len(load_sample()["turns"])
    assert "memsift demo" in out and "wait" in out
    thanks = next(r for r in rows if r["message"].startswith("thanks"))
    assert thanks["items"] == [] and thanks["chars"] == 0
    assert all(r["wait_s"] > 0 for r in rows)
    assert os.environ["MEMSIFT_HOME"] == str(isolated_env)  # restored after the demo
    assert read_audit(5) == []  # nothing written to the user's own home
