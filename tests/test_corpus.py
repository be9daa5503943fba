"""The labelled corpus is well-formed, held apart by project, and as large as training needs."""

import json
import subprocess
import sys
from pathlib import Path

from memsift.judge.corpus import CORPUS, read_corpus, read_session

CHECK = Path(__file__).resolve().parents[1] / "corpus" / "check.py"


def test_every_session_passes_the_validator():
    done = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert done.stdout.strip().endswith("OK")


def test_the_corpus_is_large_and_varied():
    turns = list(read_corpus())
    answered = [t for t in turns if t.expect]
    assert len(turns) >= 5000 and len(answered) >= 1500
    kinds_of_project = {json.loads(p.read_text())["project_kind"] for p in CORPUS.glob("*/*.json")}
    assert len(kinds_of_project) >= 10
    assert sum(t.keep for t in turns) >= 600  # the keep decision trains on the same turns


def test_no_project_is_on_both_sides_of_the_split():
    splits: dict[str, set[str]] = {}
    for turn in read_corpus():
        splits.setdefault(turn.project, set()).add(turn.split)
    assert all(len(s) == 1 for s in splits.values())
    assert {"train", "val"} == set().union(*splits.values())


def test_a_turn_carries_the_turns_before_it(tmp_path):
    session = {"name": "p", "project_kind": "cli", "split": "train", "summary": "s",
               "now": "2026-11-01T00:00:00Z",
               "notes": [{"id": "n1", "text": "run make lint before pushing", "written": "2026-10-01"}],
               "memory": [],
               "turns": [{"user": "tests fail", "assistant": "the lint step failed", "kind": "action",
                          "expect": [], "why": "w", "keep": False},
                         {"user": "again?", "assistant": "yes, lint", "kind": "recurring",
                          "expect": ["n1"], "why": "w", "keep": False}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(session))
    first, second = read_session(path)
    assert first.context == "" and second.context == "tests fail\nthe lint step failed"
    assert second.expect == {"n1"} and second.items[0].source == "notes"


def test_the_validator_rejects_a_broken_session(tmp_path):
    bad = {"name": "b", "project_kind": "web", "split": "train", "summary": "", "now": "",
           "notes": [], "memory": [], "turns": [{"user": "ok", "assistant": "ok",
                                                 "kind": "reaction", "expect": ["m9"],
                                                 "why": "", "keep": True}]}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(bad))
    done = subprocess.run([sys.executable, str(CHECK), str(path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1
    assert "unknown id" in done.stdout and "kept but has no fact" in done.stdout
