"""`memsift sync` and `memsift cognee status` through the front door (no Cognee needed)."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from memsift.cli import cli


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_status_says_the_embedded_store_is_in_use_when_no_server_is_configured():
    result = CliRunner().invoke(cli, ["cognee", "status"])
    assert result.exit_code == 0
    assert "embedded store" in result.output


def test_status_fails_when_the_configured_server_does_not_answer(monkeypatch):
    monkeypatch.setenv("MEMSIFT_COGNEE_URL", f"http://127.0.0.1:{_closed_port()}")
    result = CliRunner().invoke(cli, ["cognee", "status"])
    assert result.exit_code == 1
    assert "healthy: no" in result.output and "api key: missing" in result.output


def test_sync_without_a_server_says_how_to_get_one(tmp_path):
    result = CliRunner().invoke(cli, ["sync", "--project", str(tmp_path)])
    assert result.exit_code != 0
    assert "memsift cognee start" in result.output


def test_sync_keeps_the_changes_queued_when_the_server_is_down(monkeypatch, tmp_path):
    from memsift.config import load_settings
    from memsift.memory.notes import NotesFile, notes_path

    monkeypatch.setenv("MEMSIFT_COGNEE_URL", f"http://127.0.0.1:{_closed_port()}")
    NotesFile(notes_path(load_settings(), tmp_path)).write_locked("- One note.\n")
    result = CliRunner().invoke(cli, ["sync", "--project", str(tmp_path)])
    assert result.exit_code != 0
    assert "1 change(s) stay queued" in result.output
