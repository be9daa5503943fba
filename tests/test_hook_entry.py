"""`memsift hook <host> <event>` as the hosts run it: a separate process, stdin in, stdout out.
Whatever comes in, it exits 0 and prints nothing but a result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsift.memory.consolidate import STAMP_NAME
from memsift.paths import project_key
from memsift.session_end.worker import done_marker

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hosts"
HOSTS = ("claude-code", "codex")
# What each host gives a SessionEnd hook before cancelling it.
SESSION_END_BUDGET_S = {"claude-code": 1.5, "codex": 3.0}
WORKER_WAIT_S = 30


def hook(host: str, event: str, stdin: bytes, env: dict | None = None):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-P", "-m", "memsift", "hook", host, event],
                          input=stdin, capture_output=True, timeout=60, check=False,
                          env=env or dict(os.environ))
    return done, time.monotonic() - started


def log_lines(home: Path) -> list[str]:
    log = home / "logs" / "memsift.log"
    return log.read_text().splitlines() if log.exists() else []


GARBAGE = {
    "malformed JSON": b'{"session_id": "abc", "prompt": "hel',
    "invalid UTF-8": b'{"session_id": "\xff\xfe", "cwd": "/tmp", "prompt": "x"}',
    "missing fields": b'{"hook_event_name": "UserPromptSubmit"}',
    "a JSON list": b"[1, 2, 3]",
    "nothing": b"",
}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_hook_given_garbage_exits_0_silently_with_one_log_line(host, case, isolated_env):
    done, _ = hook(host, "UserPromptSubmit", GARBAGE[case])
    assert (done.returncode, done.stdout) == (0, b"")
    assert len(log_lines(isolated_env)) == 1


@pytest.mark.parametrize("host", HOSTS)
def test_hook_given_a_five_megabyte_prompt_adds_nothing(host, isolated_env):
    payload = json.loads((FIXTURES / host / "UserPromptSubmit-1.json").read_text())
    payload["prompt"] = "lorem ipsum " * (5 * 1024 * 1024 // 12)
    done, _ = hook(host, "UserPromptSubmit", json.dumps(payload).encode())
    assert (done.returncode, done.stdout) == (0, b"")
    assert [line for line in log_lines(isolated_env) if "too long" in line]


def test_hook_with_unknown_arguments_exits_0(isolated_env):
    done, _ = hook("vim", "Whatever", b"{}")
    assert (done.returncode, done.stdout) == (0, b"")
    assert "unknown arguments" in log_lines(isolated_env)[0]


@pytest.mark.parametrize("host", HOSTS)
def test_session_end_hands_off_inside_the_host_budget_and_the_worker_finishes(
        host, tmp_path, isolated_env):
    payload = json.loads((FIXTURES / host / "SessionEnd-1.json").read_text())
    payload["transcript_path"] = str(FIXTURES / host / "transcript.jsonl")
    payload["cwd"] = str(tmp_path)
    done, elapsed = hook(host, "SessionEnd", json.dumps(payload).encode())
    assert (done.returncode, done.stdout) == (0, b"")
    assert elapsed < SESSION_END_BUDGET_S[host]
    marker = done_marker(isolated_env / "data", payload["session_id"])
    end = time.monotonic() + WORKER_WAIT_S
    while not marker.exists() and time.monotonic() < end:
        time.sleep(0.1)
    assert json.loads(marker.read_text())["turns"] == 4
    # The worker's upkeep ran too: the daily consolidation left its stamp for the project.
    project = isolated_env / "data" / "projects" / project_key(tmp_path)
    assert (project / STAMP_NAME).exists()
