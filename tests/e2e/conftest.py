"""End-to-end fixtures: the real host CLIs, fake model servers, a copy of the plugin folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from e2e.hostenv import REPO, find_cli

# What a plugin install copies: the manifests, the hooks, and what pip needs for the set-up.
# plugin/ is what Claude Code's marketplace copies: links into the rest, kept as links here.
PLUGIN_FILES = ("plugin.json", "SKILL.md", "pyproject.toml", "README.md", "LICENSE",
                ".claude-plugin", ".codex-plugin", ".agents", "hooks", "memsift", "plugin")


def cli(name: str) -> str:
    path = find_cli(name)
    if path:
        return path
    message = f"{name} CLI not installed (run `make clis`)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)  # CI installs it: missing means the set-up broke
    pytest.skip(message)


@pytest.fixture
def claude_bin() -> str:
    return cli("claude")


@pytest.fixture
def codex_bin() -> str:
    return cli("codex")


def copy_plugin(dest: Path) -> Path:
    """The plugin folder as a marketplace or the skills CLI would see it (no venv, no caches)."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in PLUGIN_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore, symlinks=True)
        elif source.exists():
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture
def plugin_copy(tmp_path) -> Path:
    return copy_plugin(tmp_path / "memsift-plugin")


STAND_IN_PYTHON = """#!/bin/sh
# Stands in for the interpreter the hook runs: records how it was called and, on a prompt,
# answers as memsift does when it has something to add.
printf '%s\\n' "$*" >> {record}
cat > /dev/null
case "$*" in
  *UserPromptSubmit*)
    printf '{{"hookSpecificOutput":{{"hookEventName":"UserPromptSubmit","additionalContext":"{marker}"}}}}' ;;
esac
exit 0
"""


@pytest.fixture
def stand_in_python(tmp_path):
    """(path, marker, calls): an interpreter stand-in whose prompt answer is the marker."""
    marker = "memsift-e2e-marker-" + os.urandom(4).hex()
    record = tmp_path / "stand-in-calls.txt"
    script = tmp_path / "stand-in-python"
    script.write_text(STAND_IN_PYTHON.format(record=record, marker=marker))
    script.chmod(0o755)

    def calls() -> list[str]:
        return record.read_text().splitlines() if record.exists() else []

    return str(script), marker, calls
