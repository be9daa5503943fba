"""A real claude session through the fake model server: the decision it made is in the notes
after it ends, and a later prompt that needs it gets it added."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropicServer

from e2e.hostenv import claude_env
from memsift.config import load_settings
from memsift.memory.notes import NotesFile, notes_path
from memsift.paths import project_root
from memsift.session_end.worker import done_marker

pytestmark = pytest.mark.e2e

QUESTION = "Should the order importer keep SQLite or move to Postgres?"
DECISION = (
    "Move the order importer to Postgres. SQLite serialises writers, and the importer runs "
    "four workers that write at once, so we hit 'database is locked' every night. I changed "
    "the engine in app/db.py and kept SQLite only for the unit tests."
)
LATER = "Which database does the order importer write to, and why that one?"
CLI_TIMEOUT_S = 120
WORKER_WAIT_S = 90  # the worker loads the embedding model once for the revision pass


def _claude(claude_bin: str, prompt: str, env: dict, cwd: Path) -> dict:
    import subprocess

    done = subprocess.run([claude_bin, "-p", prompt, "--output-format", "json"], env=env,
                          cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _wait_for_session_end(path: Path) -> dict:
    end = time.monotonic() + WORKER_WAIT_S
    while time.monotonic() < end:
        if path.exists():
            marker = json.loads(path.read_text())
            if marker.get("event") == "SessionEnd":
                return marker
        time.sleep(0.2)
    raise AssertionError(f"the worker never finished {path}")


def _session_then_later_prompt(claude_bin, tmp_path, home: Path, later: bool):
    """Run the deciding session, wait for its worker; then, if asked, the later prompt.
    Returns (the session id, the notes, the model request bodies of the later prompt)."""
    import subprocess

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    with FakeAnthropicServer(replies=[DECISION]) as server:
        env = claude_env(tmp_path / "home", server.url)
        subprocess.run([sys.executable, "-m", "memsift", "install", "claude-code"], env=env,
                       check=True, capture_output=True, timeout=CLI_TIMEOUT_S)
        session = _claude(claude_bin, QUESTION, env, project)["session_id"]
        marker = _wait_for_session_end(done_marker(home / "data", session))
        assert marker["turns"] == 2, marker  # Stop may have kept it already: count notes
        notes = NotesFile(notes_path(load_settings(), project_root(project))).read()
        if later:
            _claude(claude_bin, LATER, env, project)
        bodies = [b for b in server.message_bodies() if LATER in b]
    return session, notes, bodies


def test_claude_session_decision_is_in_the_notes_after_it_ends(
        claude_bin, tmp_path, isolated_env):
    session, notes, _ = _session_then_later_prompt(claude_bin, tmp_path, isolated_env, False)
    assert [n.meta["source"] for n in notes] == [f"claude-code:{session}:0"]
    assert "Postgres" in notes[0].text and "database is locked" in notes[0].text
    assert len(notes[0].text) <= 300


def test_a_later_prompt_that_needs_the_decision_gets_it_added(
        claude_bin, tmp_path, isolated_env):
    _, _, bodies = _session_then_later_prompt(claude_bin, tmp_path, isolated_env, True)
    assert bodies and any("database is locked" in body for body in bodies)
