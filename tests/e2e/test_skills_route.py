"""The `npx skills add` route: the skills CLI copies the folder (no Python packages in it),
Claude Code loads it as a plugin, the launcher sets memsift up in the background on the first
prompt without holding it, and later prompts run memsift's hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropicServer

from e2e.conftest import cli, copy_plugin
from e2e.hostenv import REPO, claude_env
from e2e.test_hosts import PROMPT, claude_prompt, run, wait_for
from memsift.session_end.worker import done_marker

pytestmark = pytest.mark.e2e

SETUP_WAIT_S = 600  # a venv and a pip install from the package index


def _path_without_memsift() -> str:
    """PATH minus any folder holding a `memsift` (an activated dev venv): the copied folder
    must set itself up."""
    folders = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    return os.pathsep.join(f for f in folders if not (Path(f) / "memsift").exists())


def _status(env: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "memsift", "status", "--json"], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def _bootstrap_state(env: dict) -> dict:
    return _status(env)["bootstrap"] or {}


def _wait_until_ready(env: dict) -> dict:
    end = time.monotonic() + SETUP_WAIT_S
    while time.monotonic() < end:
        state = _bootstrap_state(env)
        if state.get("state") in ("ready", "failed"):
            return state
        time.sleep(2)
    raise AssertionError("the set-up never finished")


def test_skills_add_then_claude_sets_memsift_up_and_runs_its_hook(
        claude_bin, tmp_path, isolated_env):
    node, skills = cli("node"), cli("skills")
    clone = copy_plugin(tmp_path / "clone")
    project = tmp_path / "project"
    project.mkdir()
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url) | {
            "PATH": _path_without_memsift(),
            "DO_NOT_TRACK": "1", "DISABLE_TELEMETRY": "1",
            "PIP_CACHE_DIR": str(REPO / ".cache" / "pip"),  # a rerun need not download again
        }
        env.pop("MEMSIFT_PYTHON", None)
        run([node, skills, "add", str(clone), "-g", "-a", "claude-code", "-y", "--copy"],
            env, project)
        assert (tmp_path / "home" / ".claude" / "skills" / "memsift" / "hooks" / "run").exists()

        first = claude_prompt(claude_bin, env, project)
        assert first["result"] == "ok" and any(PROMPT in b for b in server.message_bodies())
        assert _bootstrap_state(env)["state"] == "setting up"

        assert _wait_until_ready(env)["state"] == "ready"
        assert all(_status(env)["models"].values())  # the set-up made the models' caches
        second = claude_prompt(claude_bin, env, project)["session_id"]
    # memsift itself ran this session's hooks, from the venv it set up
    marker = wait_for(done_marker(isolated_env / "data", second))
    assert marker["turns"] == 2
    venv_python = isolated_env / "data" / "venv" / "bin" / "python"
    assert venv_python.exists()
