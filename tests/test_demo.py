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


def test_every_sample_message_says_what_it_should_get():
    sample = load_sample()
    ids = {n["id"] for n in sample["notes"]} | {m["id"] for m in sample["memory"]}
    assert all(set(t["expect"]) <= ids for t in sample["turns"])
    assert sum(1 for t in sample["turns"] if t["expect"]) == 5


def test_the_demo_as_json_tells_the_truth_per_message(tmp_path, capsys, isolated_env):
    """The JSON is stdout alone, and each row's verdict follows from what it got and should
    get; the summary counts them (how many the offline judge answers is the benchmark's to
    report, not this test's)."""
    import json

    rows = run_demo(tmp_path / "demo", as_json=True)
    printed = json.loads(capsys.readouterr().out)
    assert printed["rows"] == rows
    for row in rows:
        got = {i["id"] for i in row["items"]}
        if row["expect"]:
            assert row["verdict"] == ("answered" if got & set(row["expect"]) else
                                      "wrong" if got else "missed")
        else:
            assert row["verdict"] == ("for nothing" if got else "silent")
    summary = printed["summary"]
    assert summary["answerable"] == 5 and summary["messages"] == len(rows)
    assert summary["answered"] + summary["missed"] + summary["wrong"] == 5
    assert summary["answered"] == sum(r["verdict"] == "answered" for r in rows)
    assert summary["silent"] + summary["for_nothing"] == 3
    for row in rows:  # every miss says where it was lost, nothing else does
        missing = set(row["expect"]) - {i["id"] for i in row["items"]}
        assert [w.split(":")[0] for w in row["why"]] == [e for e in row["expect"]
                                                         if e in missing]


def test_a_miss_says_where_it_was_lost():
    from memsift.commands.demo_run import why_missed

    gated = {"kind": "instruction", "search_p": 0.04,
             "steps": [{"name": "kind", "result": "no-search"}]}
    assert why_missed(gated, ["m03"], set()) == [
        "m03: not searched, the message read as instruction (memory needed p 0.04)"]
    judged = {"kind": "decision", "steps": [{"name": "kind", "result": "decision"},
                                            {"name": "notes", "result": "0 kept of 5"}],
              "judged": [{"id": "n01", "source": "notes", "score": 0.247, "bar": 0.32},
                         {"id": "n02", "source": "notes", "score": 0.61, "bar": 0.32}]}
    assert why_missed(judged, ["n01", "n02", "n09"], set()) == [
        "n01: judged 0.25, below the bar 0.32",
        ("n02: judged 0.61, above the bar 0.32, then dropped (named nobody the message "
         "names, or given before)"),
        ("n09: not among the four best-scored of its source, or not a candidate")]
    assert why_missed(judged, ["n01"], {"n01"}) == []
