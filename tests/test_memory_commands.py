"""`memsift import` and `memsift search` through the front door."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memsift.cli import cli
from memsift.config import load_settings
from memsift.longterm.local import LocalStore
from memsift.memory.notes import NotesFile, notes_path

DATA = Path(__file__).parent / "data"


def _project(tmp_path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_import_puts_notes_and_memory_where_the_hook_reads_them(tmp_path):
    root = _project(tmp_path)
    result = CliRunner().invoke(cli, ["import", str(DATA / "tiny_conversation.json"),
                                      "--project", str(root)])
    assert result.exit_code == 0, result.output
    assert "1 notes added" in result.output and "2 passages added" in result.output
    settings = load_settings()
    (note,) = NotesFile(notes_path(settings, root)).read()
    assert (note.id, note.written) == ("n01", "2026-03-02")
    assert sorted(p.id for p in LocalStore.for_project(settings, root).passages()) == ["m01", "m02"]
    again = CliRunner().invoke(cli, ["import", str(DATA / "tiny_conversation.json"),
                                     "--project", str(root)])
    assert "0 notes added (1 in all), 0 passages added (2 in" in again.output


def test_import_refuses_a_file_that_is_not_a_benchmark_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    result = CliRunner().invoke(cli, ["import", str(bad), "--project", str(_project(tmp_path))])
    assert result.exit_code == 1 and "no `notes` or `memory`" in result.output


def test_search_prints_every_candidate_with_its_score_best_first(tmp_path):
    root = _project(tmp_path)
    CliRunner().invoke(cli, ["import", str(DATA / "tiny_conversation.json"), "--project",
                             str(root)])
    result = CliRunner().invoke(cli, ["search", "which column type holds money amounts, cents?",
                                      "--project", str(root), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["id"] for r in rows} == {"n01", "m01", "m02"}
    scores = [r["score"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    assert rows[0]["id"] == "n01" and rows[0]["source"] == "notes"
    assert all(isinstance(r["kept"], bool) for r in rows)


def test_search_on_an_empty_project_says_so(tmp_path):
    result = CliRunner().invoke(cli, ["search", "anything", "--project",
                                      str(_project(tmp_path))])
    assert result.exit_code == 0 and "Nothing in memory" in result.output
