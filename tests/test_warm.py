"""The warm prompt server (memsift/warm.py), through the real hook command: it answers as a
hook process would, goes when idle or stopped, is replaced when it dies or hangs, and is
never used where it would be unsafe or is turned off."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from fakes.polling import PATIENT_BUDGET, wait_for

from memsift import warm
from memsift.audit import read_audit
from memsift.bench.replay import prepare
from memsift.fsutil import process_alive

NOTE = "The staging database listens on port 6543, not on 5432."
QUESTION = "which port does the staging database use?"


@pytest.fixture
def warm_env(monkeypatch):
    """The warm server on, its sockets in a short private folder (a Unix socket's path is
    limited to about 100 bytes), and whatever server a test started stopped after it. A
    patient prompt budget: a cold hook process on a loaded machine can pass the offline
    second, and these tests are about who answers, not how fast (memsift bench measures it)."""
    base = tempfile.mkdtemp(prefix="msw-", dir="/tmp")
    monkeypatch.setenv("TMPDIR", base)
    for name, value in PATIENT_BUDGET.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEMSIFT_WARM", "1")
    monkeypatch.setenv("MEMSIFT_WARM_IDLE_S", "120")
    yield base
    warm.stop()
    where = warm.folder()
    pid = warm._server_pid(warm.paths(warm.key_for(), where)) if where else None
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def project(tmp_path):
    data = {"name": "warm", "notes": [{"id": "n1", "text": NOTE, "written": "2026-11-02"}],
            "memory": [], "turns": []}
    _, root = prepare(data, tmp_path / "work", "embedded")
    return root


def hook(project: Path, session: str, prompt: str = QUESTION) -> tuple[str, float]:
    payload = json.dumps({"session_id": session, "transcript_path": "", "cwd": str(project),
                          "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    begin = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "memsift", "hook", "claude-code",
                           "UserPromptSubmit"], input=payload.encode(), capture_output=True,
                          cwd=project, env=dict(os.environ), timeout=60, check=True)
    return done.stdout.decode(), time.monotonic() - begin


def running() -> bool:
    return warm.status()["running"]


def files() -> dict[str, str]:
    return warm.paths(warm.key_for(), warm.folder())


def test_the_warm_server_answers_the_next_prompt_as_the_hook_process_did(warm_env, project):
    first, _ = hook(project, "s1")
    assert "6543" in first
    assert read_audit(1)[0]["warm"] is False  # no server yet: the hook answered, then started one
    assert wait_for(running)

    second, _ = hook(project, "s2")
    assert second == first
    assert read_audit(1)[0]["warm"] is True
    assert warm.status()["answered"] == 1
    shown = subprocess.run([sys.executable, "-m", "memsift", "warm", "status"],
                           capture_output=True, text=True, check=True).stdout
    assert "running" in shown and "1 prompts answered" in shown

    assert warm.stop()
    assert wait_for(lambda: not os.path.exists(files()["sock"]), 10)
    assert not running()


def test_stop_can_wait_until_the_server_is_gone(warm_env, project):
    """Whoever deletes the server's folder next (a benchmark's temporary home) waits for it:
    once stop(wait_s=...) returns, its process has exited and its socket is removed."""
    hook(project, "s1")
    assert wait_for(running)
    pid = warm.status()["pid"]
    assert warm.stop(wait_s=10)
    assert not process_alive(pid)
    assert not os.path.exists(files()["sock"])
    assert not warm.stop(wait_s=10)  # nobody listening: answered at once


def test_a_killed_server_costs_nothing_and_the_next_prompt_starts_another(warm_env, project):
    hook(project, "s1")
    assert wait_for(running)
    pid = warm.status()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not process_alive(pid), 10)
    assert os.path.exists(files()["sock"])  # left behind: nobody listens on it

    out, _ = hook(project, "s2")
    assert "6543" in out
    assert read_audit(1)[0]["warm"] is False
    assert wait_for(lambda: running() and warm.status()["pid"] != pid)


@contextlib.contextmanager
def a_server_that_hangs(acknowledge: bool):
    """A listener on this environment's socket that takes the prompt and never answers it
    (after acknowledging it with a budget of 0.2 s, if asked to)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(files()["sock"])
    listener.listen(1)
    held = []

    def take():
        conn, _ = listener.accept()
        held.append(conn)
        if acknowledge:
            conn.recv(1 << 16)
            body = json.dumps({"budget_s": 0.2}).encode()
            conn.sendall(len(body).to_bytes(4, "big") + body)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    try:
        yield
    finally:
        listener.close()
        thread.join(5)
        for conn in held:
            conn.close()


@pytest.mark.parametrize("acknowledge", [False, True])
def test_a_server_that_takes_the_prompt_and_never_answers_is_dropped(
        warm_env, project, acknowledge):
    with a_server_that_hangs(acknowledge):
        out, wait = hook(project, "s1")
    assert out == ""  # the prompt's time went waiting for it: nothing added, no second try
    assert wait < 20  # a second for the ack, or the budget and a second: a bound
    assert not os.path.exists(files()["sock"])  # the next prompt starts a real server
    log = (Path(os.environ["MEMSIFT_HOME"]) / "logs").glob("*.log")
    assert any("did not answer in time" in f.read_text() for f in log)


def test_a_terminated_server_takes_its_files_with_it(warm_env, project):
    hook(project, "s1")
    assert wait_for(running)
    os.kill(warm.status()["pid"], signal.SIGTERM)
    assert wait_for(lambda: not any(os.path.exists(f) for f in files().values()), 10)


def test_an_idle_server_exits_and_takes_its_socket_with_it(warm_env, project, monkeypatch):
    monkeypatch.setenv("MEMSIFT_WARM_IDLE_S", "1")
    hook(project, "s1")
    assert wait_for(lambda: os.path.exists(files()["pid"]))
    assert wait_for(lambda: not os.path.exists(files()["sock"])
                    and not os.path.exists(files()["pid"]), 30)


def test_off_means_each_prompt_in_its_own_process(warm_env, project, monkeypatch):
    monkeypatch.setenv("MEMSIFT_WARM", "0")
    out, _ = hook(project, "s1")
    assert "6543" in out
    time.sleep(1)
    assert not list(Path(warm_env).glob("memsift-*/*.sock"))
    assert not list(Path(warm_env).glob("memsift-*/*.spawned"))


def test_a_socket_folder_others_can_open_is_never_used(warm_env, project):
    shared = Path(warm_env) / f"memsift-{os.getuid()}"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    assert warm.folder() is None
    out, _ = hook(project, "s1")
    assert "6543" in out
    time.sleep(1)
    assert not list(shared.iterdir())


def test_the_server_key_follows_the_environment_and_the_code(tmp_path):
    env = {"MEMSIFT_HOME": "/a", "HOME": "/home/x", "PATH": "/bin"}
    assert warm.key_for(env) == warm.key_for(dict(env, PATH="/usr/bin", MEMSIFT_WARM="1"))
    assert warm.key_for(env) != warm.key_for(dict(env, MEMSIFT_HOME="/b"))
    assert warm.key_for(env) != warm.key_for(dict(env, OPENAI_API_KEY="sk-other"))
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text("A = 1\n")
    before = warm.key_for(env, str(package))
    (package / "mod.py").write_text("A = 22\n")
    assert warm.key_for(env, str(package)) != before
