"""Every test is isolated from the machine: MEMSIFT_HOME in tmp_path, no outside settings."""

from __future__ import annotations

import os

import pytest

# Shared fakes (real servers on 127.0.0.1) as fixtures: openai_server, ...
pytest_plugins = ["fakes"]

_CLEARED_PREFIXES = ("MEMSIFT_", "OPENAI_", "COGNEE_", "ANTHROPIC_", "CODEX_", "TYPESAFE_",
                     "OPENROUTER_")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "memsift-home"
    monkeypatch.setenv("MEMSIFT_HOME", str(home))
    # Each test's hook processes answer their own prompts: a warm server per test home would
    # outlive the test. tests/test_warm.py turns it on where it is the subject.
    monkeypatch.setenv("MEMSIFT_WARM", "0")
    return home
