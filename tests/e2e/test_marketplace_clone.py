"""The route a new user takes: a git clone, `make demo` in it (a .venv full of links), then
`claude plugin marketplace add <clone>` and `claude plugin install memsift@memsift`. The
plugin Claude Code copies holds only what the plugin needs, sets itself up in the background
on the first prompt, and once ready a note that answers the prompt reaches the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropicServer
from fakes.polling import PATIENT_BUDGET

from e2e.hostenv import REPO, claude_env
from e2e.test_hosts import claude_prompt, run
from e2e.test_skills_route import (
    _bootstrap_state,
    _path_without_memsift,
    _status,
    _wait_until_ready,
)

pytestmark = pytest.mark.e2e

DEMO_TIMEOUT_S = 600  # a venv and a pip install (from the pip cache when warm, ~20 s)
NOTE = "The staging database listens on port 6543, not the default 5432."
# What a clone holds that a plugin must never carry: development environments and caches.
DEVELOPMENT = (".venv", ".cache", ".git", "node_modules", "build", ".pytest_cache",
               ".ruff_cache", ".hypothesis", "tests", "corpus", "bench", "memsift.egg-info")


def _clone_after_make_demo(tmp_path: Path) -> Path:
    """A clone of the committed tree, with `make demo` run in it as the README says."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True,
                   capture_output=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSIFT_", "VIRTUAL_ENV"))}
    env["PATH"] = _path_without_memsift()
    done = subprocess.run(["make", "demo", f"PYTHON={sys.executable}"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "characters in all" in done.stdout  # the demo ran to its summary
    assert (clone / ".venv" / "bin" / "python").is_symlink()  # what a copy drops
    return clone


def _project_with_note(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    data = tmp_path / "notes.json"
    data.write_text(json.dumps({"notes": [{"id": "n07", "text": NOTE, "written": "2026-10-01"}]}))
    subprocess.run([sys.executable, "-m", "memsift", "import", str(data), "--project",
                    str(project)], check=True, capture_output=True, timeout=120)
    return project


def _installed_plugin(home: Path) -> Path:
    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    return Path(installed["plugins"]["memsift@memsift"][0]["installPath"])


def test_marketplace_install_from_a_clone_sets_itself_up_and_adds_a_note(
        claude_bin, tmp_path, isolated_env):
    clone = _clone_after_make_demo(tmp_path)
    project = _project_with_note(tmp_path)
    home = tmp_path / "home"
    with FakeAnthropicServer() as server:
        env = claude_env(home, server.url) | {
            "PATH": _path_without_memsift(), "DO_NOT_TRACK": "1", "DISABLE_TELEMETRY": "1",
            "PIP_CACHE_DIR": str(REPO / ".cache" / "pip"),  # a rerun need not download again
        } | PATIENT_BUDGET
        env.pop("MEMSIFT_PYTHON", None)
        run([claude_bin, "plugin", "marketplace", "add", str(clone)], env, project)
        run([claude_bin, "plugin", "install", "memsift@memsift"], env, project)

        plugin = _installed_plugin(home)
        assert (plugin / "hooks" / "run").is_file() and (plugin / "memsift").is_dir()
        assert (plugin / "pyproject.toml").is_file()
        assert [name for name in DEVELOPMENT if (plugin / name).exists()] == []
        assert not list(plugin.rglob("*.egg-info")) and not list(plugin.rglob("pyvenv.cfg"))

        first = claude_prompt(claude_bin, env, project)
        assert first["result"] == "ok"
        assert not any("memsift-memory" in body for body in server.message_bodies())
        assert _bootstrap_state(env)["state"] == "setting up"

        assert _wait_until_ready(env)["state"] == "ready"
        assert all(_status(env)["models"].values())  # the set-up made the models' caches
        before = len(server.message_bodies())
        claude_prompt(claude_bin, env, project)
        sent = server.message_bodies()[before:]
    assert any("<memsift-memory>" in body and "6543" in body and "n07" in body for body in sent)
    assert (isolated_env / "data" / "venv" / "bin" / "python").exists()
