"""The labelled corpus is well-formed, held apart by project, and as large as training needs."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memsift.judge.corpus import CORPUS, answered_before, read_corpus, read_session

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


def _three_turns(tmp_path, why: str) -> list:
    """A session whose second reply gives the backup note, then a question it answers."""
    note = "Backups: nightly pg_dump to the ledger-backups bucket, kept thirty days."
    other = "Grafana dashboards live in ops/dashboards; export them as JSON before editing."
    turns = [("where do the dashboards live?", "In ops/dashboards.", "past_choice", ["n2"], []),
             ("and backups?", "Nightly pg_dump to the ledger-backups bucket, kept thirty days.",
              "past_choice", ["n1"], []),
             ("how long do we keep those dumps again?", "Thirty days.", "earlier_exchange", [],
              ["n1", "n2"])]
    session = {"name": "b", "project_kind": "web", "split": "train", "summary": "s",
               "now": "2026-11-01T00:00:00Z",
               "notes": [{"id": "n1", "text": note, "written": "2026-10-01"},
                         {"id": "n2", "text": other, "written": "2026-10-01"}],
               "memory": [],
               "turns": [{"user": u, "assistant": a, "kind": k, "expect": e, "near": near,
                          "why": why, "keep": False} for u, a, k, e, near in turns]}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(session))
    return read_session(path)


def test_a_turn_knows_which_items_the_session_has_said_already(tmp_path):
    """Turn.held: what the cascade's conversation filter would drop at that turn."""
    first, second, third = _three_turns(tmp_path, "w")
    assert first.held == frozenset() and second.held == frozenset()
    assert third.held == {"n1"}  # the reply before said the backup note almost word for word


def test_a_near_item_the_session_gave_already_is_not_taught_as_a_near_miss(tmp_path):
    *_, third = _three_turns(tmp_path, "no stored item decides it")
    assert answered_before(third, "n1")  # held: it may answer, the session said it
    assert not answered_before(third, "n2")  # a same-subject item that does not answer
    *_, third = _three_turns(tmp_path, "given in the previous reply")
    assert answered_before(third, "n2")  # the writer says the session gave the answer
    first, *_ = _three_turns(tmp_path, "given in the previous reply")
    assert not answered_before(first, "n1")  # a turn that expects something has no doubt


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


def _one_session(root: Path, keep_first: bool) -> Path:
    session = {"name": "p", "project_kind": "cli", "split": "train", "summary": "s",
               "now": "2026-11-01T00:00:00Z", "notes": [], "memory": [],
               "turns": [{"user": "why are the thumbnails black?",
                          "assistant": "The resizer read CMYK JPEGs as RGB; now it converts.",
                          "kind": "recurring", "expect": [], "why": "w", "keep": keep_first,
                          **({"fact": "the writer's fact"} if keep_first else {})},
                         {"user": "merge it", "assistant": "Merged #12.", "kind": "action",
                          "expect": [], "why": "w", "keep": True, "fact": "Merged #12."}]}
    path = root / "sessions" / "cli" / "p.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(session))
    return path


def test_the_keep_labels_file_replaces_the_keep_labels_the_session_writer_gave(tmp_path):
    _one_session(tmp_path, keep_first=False)
    (tmp_path / "keep-labels.jsonl").write_text(json.dumps(
        {"session": "cli/p", "turns": 2, "kept": {"0": "Convert CMYK JPEGs to sRGB before resizing."}})
        + "\n")
    root = tmp_path / "sessions"
    ruled = list(read_corpus((root,)))
    assert [t.keep for t in ruled] == [True, False]
    assert ruled[0].fact == "Convert CMYK JPEGs to sRGB before resizing." and ruled[1].fact == ""
    writers = list(read_corpus((root,), keep_labels=False))
    assert [t.keep for t in writers] == [False, True] and writers[1].fact == "Merged #12."


def test_keep_labels_for_another_number_of_turns_are_refused(tmp_path):
    _one_session(tmp_path, keep_first=True)
    (tmp_path / "keep-labels.jsonl").write_text(
        json.dumps({"session": "cli/p", "turns": 3, "kept": {}}) + "\n")
    with pytest.raises(ValueError, match="3 turns"):
        list(read_corpus((tmp_path / "sessions",)))


def test_the_validator_checks_the_keep_labels_file(tmp_path):
    spec = importlib.util.spec_from_file_location("corpus_check", CHECK)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    _one_session(tmp_path, keep_first=True)
    labels = tmp_path / "keep-labels.jsonl"
    labels.write_text("\n".join(json.dumps(row) for row in (
        {"session": "cli/p", "turns": 2, "kept": {"0": "Convert CMYK JPEGs to sRGB before resizing."}},
        {"session": "cli/p", "turns": 2, "kept": {"5": "x" * 20, "1": ""}},
        {"session": "cli/q", "turns": 2, "kept": {}})) + "\n")
    errors, kept_turns = check.check_keep_labels(labels, tmp_path / "sessions")
    assert kept_turns == 3
    assert any("labelled twice" in e for e in errors)
    assert any("turn 5 is not one of the session's" in e for e in errors)
    assert any("turn 1 needs a one-line fact" in e for e in errors)
    assert any("no session cli/q" in e for e in errors)
    assert len(errors) == 4


def test_the_validator_checks_the_cross_pairs(tmp_path):
    spec = importlib.util.spec_from_file_location("corpus_check", CHECK)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    good = {"project": "ferrow-cli", "message": "why typer and not click?", "reply_before": "",
            "answer": "CLI: Typer, so help text comes from the type hints.",
            "near": ["Typer's completion is installed with --install-completion."]}
    pairs = tmp_path / "a.jsonl"
    pairs.write_text("\n".join(json.dumps(row) for row in (
        good,
        {**good, "project": "other", "near": [good["answer"]]},
        {**good, "project": "held", "near": []},
        {**good, "project": "val-one"},
        {k: v for k, v in good.items() if k != "reply_before"} | {"project": "x"},
    )) + "\n" + json.dumps(good) + "\nnot json\n")
    errors, groups = check.check_cross_pairs([pairs], {"val-one"})
    assert groups == 4  # the good one, its repeat, the near-is-answer and the validation one
    assert any("also a near miss" in e for e in errors)
    assert any("one to three near misses" in e for e in errors)
    assert any("is a validation project" in e for e in errors)
    assert any("the keys must be" in e for e in errors)
    assert any("ferrow-cli is also" in e for e in errors)
    assert any("unreadable" in e for e in errors)
    assert len(errors) == 6


def test_the_cross_pairs_are_training_groups_the_cross_encoder_reads():
    """The staged groups (corpus/next/cross-pairs) as the trainer would read them."""
    from memsift.judge.corpus import read_pair_files
    from memsift.training.cross import pair_examples

    groups = read_pair_files(sorted((CORPUS.parent / "next" / "cross-pairs").glob("*.jsonl")))
    assert len(groups) >= 300
    rows = pair_examples(groups)
    assert len(rows) == sum(1 + len(g["near"]) for g in groups)
    assert sum(label for _, _, label in rows) == len(groups)
    val = {t.project for t in read_corpus() if t.split == "val"}
    assert not val & {g["project"] for g in groups}
