"""`memsift notes list|show|edit|undo|history` through the front door."""

from __future__ import annotations

from click.testing import CliRunner

from memsift.cli import cli
from memsift.config import load_settings
from memsift.memory.notes import Note, NotesFile, notes_path
from memsift.paths import project_root


def _notes(project) -> NotesFile:
    return NotesFile(notes_path(load_settings(), project_root(project)))


def _run(*args, input=None):
    result = CliRunner().invoke(cli, ["notes", *args], input=input)
    assert result.exit_code == 0, result.output
    return result.output


def test_list_shows_each_note_with_line_date_id_and_source(tmp_path):
    _notes(tmp_path).append([Note("Use Postgres for the importer.", id="n01",
                                  written="2024-06-12", meta={"source": "claude-code:s1:0"}),
                             Note("Written by hand.")])
    lines = _run("list", "--project", str(tmp_path)).splitlines()
    assert lines[0].split() == ["line", "written", "id", "source", "text"]
    assert lines[1].split(None, 4) == ["3", "2024-06-12", "n01", "claude-code:s1:0",
                                       "Use Postgres for the importer."]
    assert lines[2].split(None, 4)[1:4] == ["-", Note("Written by hand.").key, "-"]
    # the source column is where the header says, in every row
    column = lines[0].index("source")
    assert lines[1][column:].startswith("claude-code:s1:0") and lines[2][column] == "-"


def test_undo_restores_the_exact_bytes_and_history_lists_the_versions(tmp_path):
    notes_file = _notes(tmp_path)
    notes_file.append([Note("First.")])
    first = notes_file.path.read_bytes()
    notes_file.append([Note("Second.")])
    history = _run("history", "--project", str(tmp_path))
    assert "1 notes" in history and "(no file)" in history
    assert _run("show", "--project", str(tmp_path), "--version", "2") == first.decode()
    _run("undo", "--project", str(tmp_path))
    assert notes_file.path.read_bytes() == first
    _run("undo", "--project", str(tmp_path))
    assert not notes_file.path.exists()
    result = CliRunner().invoke(cli, ["notes", "undo", "--project", str(tmp_path)])
    assert result.exit_code == 1 and "no earlier version" in result.output


def test_edit_saves_through_the_editor_and_can_be_undone(tmp_path, monkeypatch):
    notes_file = _notes(tmp_path)
    notes_file.append([Note("Old wording.")])
    before = notes_file.path.read_bytes()
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/Old wording/New wording/' \"$1\"\n")
    editor.chmod(0o700)
    monkeypatch.setenv("EDITOR", str(editor))
    _run("edit", "--project", str(tmp_path))
    assert [n.text for n in notes_file.read()] == ["New wording."]
    _run("undo", "--project", str(tmp_path))
    assert notes_file.path.read_bytes() == before


def test_show_prints_the_file_as_it_is(tmp_path):
    _notes(tmp_path).append([Note("A note.")])
    assert _run("show", "--project", str(tmp_path)) == _notes(tmp_path).read_text()
