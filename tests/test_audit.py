"""The audit log: one line per decision, read back newest last, corrupt lines skipped."""

from __future__ import annotations

import json

from memsift.audit import Decision, ItemRecord, read_audit, write_decision


def _decision(project: str, chars: int = 0) -> Decision:
    decision = Decision(project=project, session="s1", host="claude-code", kind="resume")
    decision.step("kind", 1.234, "resume")
    decision.added.append(ItemRecord("n01", "notes", 0.8123456, "2024-06-12"))
    decision.chars = chars
    return decision


def test_each_decision_is_one_json_line_with_its_steps_and_items(tmp_path):
    path = tmp_path / "audit.jsonl"
    write_decision(_decision("/p", chars=120), path)
    (line,) = path.read_text().splitlines()
    data = json.loads(line)
    assert data["steps"] == [{"name": "kind", "ms": 1.23, "result": "resume"}]
    assert data["added"][0] == {"id": "n01", "source": "notes", "score": 0.8123,
                                "written": "2024-06-12"}
    assert data["chars"] == 120 and data["project"] == "/p"


def test_the_line_keeps_the_best_judged_items_of_each_source_with_their_bar(tmp_path):
    from types import SimpleNamespace as Scored

    from memsift.audit import JUDGED_SHOWN

    decision = _decision("/p")
    notes = [Scored(id=f"n{k:02}", score=k / 10) for k in range(JUDGED_SHOWN + 3)]
    decision.judged_items("notes", notes, 0.3212345)
    decision.judged_items("longterm", [Scored(id="m01", score=0.123456)], 0.49)
    path = tmp_path / "audit.jsonl"
    write_decision(decision, path)
    judged = json.loads(path.read_text())["judged"]
    best = [f"n{k:02}" for k in range(JUDGED_SHOWN + 2, 2, -1)]
    assert [j["id"] for j in judged if j["source"] == "notes"] == best
    assert judged[-1] == {"id": "m01", "source": "longterm", "score": 0.1235, "bar": 0.49}
    assert {j["bar"] for j in judged if j["source"] == "notes"} == {0.3212}


def test_reader_returns_the_last_n_and_skips_corrupt_lines(tmp_path):
    path = tmp_path / "audit.jsonl"
    for index in range(30):
        write_decision(_decision("/p", chars=index), path)
        if index == 28:
            with open(path, "a") as handle:
                handle.write('{"truncated": \n[1, 2]\n')
    got = read_audit(5, path=path)
    assert [d["chars"] for d in got] == [25, 26, 27, 28, 29]


def test_reader_filters_one_project_reading_further_back(tmp_path):
    path = tmp_path / "audit.jsonl"
    write_decision(_decision("/rare", chars=1), path)
    for index in range(3000):
        write_decision(_decision("/busy", chars=index), path)
    got = read_audit(3, project="/rare", path=path)
    assert [d["chars"] for d in got] == [1]
    assert read_audit(3, path=tmp_path / "missing.jsonl") == []


def test_reader_defaults_to_the_data_folder(isolated_env):
    from memsift.paths import get_paths

    write_decision(_decision("/p", chars=7), get_paths().audit_file)
    assert read_audit(1)[0]["chars"] == 7


def test_session_added_lists_what_this_session_already_got(tmp_path):
    from memsift.audit import session_added

    path = tmp_path / "audit.jsonl"
    write_decision(_decision("/p"), path)  # session s1, n01
    other = _decision("/p")
    other.session = "s2"
    other.added = [ItemRecord("m09", "longterm", 0.9)]
    write_decision(other, path)
    assert session_added("s1", "/p", path) == {"n01"}
    assert session_added("s2", "/p", path) == {"m09"}
    assert session_added("s1", "/elsewhere", path) == set()
    assert session_added("", "/p", path) == set()
