"""hooks/run, the plugin's launcher: it hands the hook to an interpreter only once that
interpreter starts, and sets memsift up in the background when none does, saying so in the
log and in `memsift status`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP_WAIT_S = 30  # the stand-in set-up fails at once; this only stops a hung one
PAYLOAD = json.dumps({"session_id": "s1", "cwd": "/tmp", "prompt": "which port?",
                      "hook_event_name": "UserPromptSubmit"}).encode()

# A Python >= 3.11 as the launcher's set-up finds it on PATH, whose `-m venv` fails: the
# background set-up runs to its end ("failed") without building anything.
SETUP_PYTHON = """#!/bin/sh
printf '%s\\n' "$*" >> {record}
case "$1" in -c) exit 0 ;; esac
exit 1
"""
# An interpreter that runs: records how it was called, answers the prompt hook.
WORKING_PYTHON = """#!/bin/sh
printf '%s\\n' "$*" >> {record}
cat > /dev/null
case "$*" in *UserPromptSubmit*) printf 'context from the plugin venv' ;; esac
exit 0
"""


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def plugin(tmp_path) -> Path:
    """The plugin folder as a host's copy leaves it: a .venv whose bin/python was a link."""
    folder = tmp_path / "plugin"
    for name in ("hooks", "plugin.json", "pyproject.toml", "README.md"):
        source = REPO / name
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            subprocess.run(["cp", "-R", str(source), str(target)], check=True)
        else:
            target.write_bytes(source.read_bytes())
    (folder / "memsift").mkdir()  # the set-up copies it; the stand-in never installs it
    _script(folder / ".venv" / "bin" / "memsift", "#!/bin/sh\n")  # its python link is gone
    return folder


@pytest.fixture
def launcher_env(tmp_path, isolated_env) -> dict:
    """PATH with the stand-in set-up Python first and no `memsift` on it."""
    bin_dir = tmp_path / "bin"
    _script(bin_dir / "python3.13", SETUP_PYTHON.format(record=tmp_path / "setup-calls"))
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"),
            "MEMSIFT_HOME": str(isolated_env)}


def launch(plugin: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(plugin / "hooks" / "run"), "claude-code",
                           "UserPromptSubmit"], input=PAYLOAD, env=env, capture_output=True,
                          timeout=60, check=False)


def _bootstrap(home: Path) -> dict:
    path = home / "data" / "bootstrap.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _wait_for_failed(home: Path) -> dict:
    end = time.monotonic() + SETUP_WAIT_S
    while time.monotonic() < end:
        if _bootstrap(home).get("state") == "failed":
            return _bootstrap(home)
        time.sleep(0.1)
    raise AssertionError(f"the set-up never ended: {_bootstrap(home)}")


def test_a_venv_that_does_not_run_is_not_trusted_and_the_set_up_starts(
        plugin, launcher_env, isolated_env, tmp_path):
    done = launch(plugin, launcher_env)
    assert (done.returncode, done.stdout) == (0, b"")
    state = _wait_for_failed(isolated_env)
    assert str(plugin / ".venv" / "bin" / "python") in state["why"]
    assert "does not run" in state["why"]
    assert "-m venv" in (tmp_path / "setup-calls").read_text()  # the set-up was attempted
    log = (isolated_env / "logs" / "memsift.log").read_text()
    assert "WARNING" in log and "does not run" in log and str(plugin / ".venv") in log


def test_memsift_status_says_why_the_launcher_set_up_again(plugin, launcher_env, isolated_env):
    launch(plugin, launcher_env)
    _wait_for_failed(isolated_env)
    status = subprocess.run([sys.executable, "-m", "memsift", "status", "--json"],
                            capture_output=True, text=True, timeout=60, check=True,
                            env=dict(os.environ))
    bootstrap = json.loads(status.stdout)["bootstrap"]
    assert bootstrap["state"] == "failed" and "does not run" in bootstrap["why"]


def test_a_venv_whose_interpreter_runs_gets_the_hook(plugin, launcher_env, isolated_env,
                                                     tmp_path):
    record = tmp_path / "venv-calls"
    _script(plugin / ".venv" / "bin" / "python", WORKING_PYTHON.format(record=record))
    done = launch(plugin, launcher_env)
    assert (done.returncode, done.stdout) == (0, b"context from the plugin venv")
    assert "-P -m memsift hook claude-code UserPromptSubmit" in record.read_text()
    assert _bootstrap(isolated_env) == {}  # nothing to set up


def test_memsift_python_that_does_not_run_falls_through_to_the_set_up(
        plugin, launcher_env, isolated_env, tmp_path):
    env = launcher_env | {"MEMSIFT_PYTHON": str(tmp_path / "gone" / "python")}
    (plugin / ".venv").rename(tmp_path / "no-venv")
    done = launch(plugin, env)
    assert (done.returncode, done.stdout) == (0, b"")
    assert "MEMSIFT_PYTHON" in _wait_for_failed(isolated_env)["why"]
