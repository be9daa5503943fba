"""`memsift status` drawn in a real terminal (tmux), read back with capture-pane.

Run as a script to refresh the capture in docs/status.md:
    .venv/bin/python tests/test_status_terminal.py > docs/status-capture.txt
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

WIDTH, HEIGHT = 112, 90
SEEN_WITHIN_S = 30.0  # a fresh Python process on a loaded machine


def seed(home: Path) -> None:
    """A data folder with a paused Cognee, an ended outage, notes and two decisions."""
    os.environ["MEMSIFT_HOME"] = str(home)
    os.environ["MEMSIFT_NOW"] = "2026-11-20T14:07:00+00:00"
    os.environ["MEMSIFT_COGNEE_URL"] = "http://127.0.0.1:8000"
    os.environ["MEMSIFT_COGNEE_API_KEY"] = "ck-secret-value"
    from memsift.audit import Decision, ItemRecord, write_decision
    from memsift.config import load_settings
    from memsift.memory.notes import Note, NotesFile, notes_path
    from memsift.services.health import Health

    settings = load_settings()
    health = Health.for_settings(settings)
    health.report_failure("llm", "server", "HTTP 502 from the endpoint")
    health.resume("llm", by="probe")
    health.report_failure("longterm", "timeout", "Cognee gave no answer within 0.78s")
    project = home / "riverbed"
    project.mkdir(parents=True, exist_ok=True)
    NotesFile(notes_path(settings, project)).append(
        [Note("Staging model names use a double underscore.", id="n01", written="2024-06-12"),
         Note("The sync job retries three times, then gives up.", id="n02")])
    root = str(project.resolve())
    write_decision(Decision(project=root, session="s1", host="claude-code", kind="past_choice",
                            chars=212, wait_ms=131.5,
                            added=[ItemRecord("n01", "notes", 0.83, "2024-06-12")]),
                   settings.paths.audit_file)
    write_decision(Decision(project=root, session="s1", host="claude-code", kind="reaction",
                            wait_ms=18.2), settings.paths.audit_file)


def capture(home: Path, socket: Path) -> str:
    """Run `memsift status` in a detached tmux pane and return what the terminal shows."""
    env = {k: os.environ[k] for k in os.environ if k.startswith("MEMSIFT_") or k == "HOME"}
    env_args = " ".join(f"{k}='{v}'" for k, v in env.items())
    command = (f"env -u COLUMNS -u LINES TERM=xterm-256color {env_args} "  # the pane's size
               f"{sys.executable} -m memsift status; echo __done__; sleep 60")
    tmux = ["tmux", "-S", str(socket), "-f", os.devnull]  # a private server, no user config
    size = f"{WIDTH}x{HEIGHT}"
    subprocess.run(tmux + ["start-server", ";", "set", "-g", "default-size", size, ";",
                           "new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), command],
                   check=True, timeout=30, stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + SEEN_WITHIN_S
        while True:
            shown = subprocess.run(tmux + ["capture-pane", "-p", "-J"], capture_output=True,
                                   text=True, check=True, timeout=30).stdout
            if "__done__" in shown or time.monotonic() > end:
                return shown.split("__done__")[0].rstrip() + "\n"
            time.sleep(0.2)
    finally:
        subprocess.run(tmux + ["kill-server"], check=False, capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (make test "
                    "installs it)")
def test_status_in_a_real_terminal_shows_the_outage_and_the_decisions(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSIFT_NOW", "2026-11-20T14:07:00+00:00")  # restored after the test
    monkeypatch.setenv("MEMSIFT_COGNEE_URL", "")
    monkeypatch.setenv("MEMSIFT_COGNEE_API_KEY", "")
    seed(tmp_path / "home")
    shown = capture(tmp_path / "home", tmp_path / "tmux.sock")
    assert "Traceback" not in shown
    assert "┏" in shown and "┃" in shown  # rich tables drawn with the terminal's box glyphs
    lines = shown.splitlines()
    longterm = next(line for line in lines if "longterm" in line and "cognee" in line)
    assert "paused" in longterm and "timeout" in longterm and "14:07" in longterm
    assert any("llm" in line and "server" in line and "probe" in line for line in lines), shown
    assert "ck-secret-value" not in shown and "ck-…****" in shown
    assert "past_choice" in shown and "notes:n01" in shown and "212" in shown
    assert any("riverbed" in line and "│ 2 " in line for line in lines), shown  # two notes
    assert "warm server: off" in shown  # the tests' hooks answer their own prompts
    assert max(len(line) for line in lines) <= WIDTH


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["HOME"] = scratch  # paths under it are shown as ~/...
        seed(Path(scratch) / "home")
        text = capture(Path(scratch) / "home", Path(scratch) / "tmux.sock")
        print("\n".join(line.rstrip() for line in text.splitlines()))
