"""`memsift install` / `uninstall`: merged into the user's host config, never clobbering it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsift.cli import cli
from memsift.hosts.install import HOOK_TIMEOUTS_S, codex_trusted_hash

REPO = Path(__file__).resolve().parents[1]
PYTHON = "/opt/memsift/bin/python"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def memsift(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_codex_trust_hash_matches_what_codex_computes():
    # currentHash values reported by the pinned Codex's app-server (hooks/list) for these hooks
    handler = {"type": "command", "command": "/tmp/rec/dump.sh UserPromptSubmit", "timeout": 10}
    assert codex_trusted_hash("UserPromptSubmit", handler) == (
        "sha256:7bb2afcc6a53b25ef7e337f8794ab1b908aa9d0924c6baa2f106fb737334046a")
    handler = {"type": "command", "command": "/tmp/rec/dump.sh SessionEnd", "timeout": 1}
    assert codex_trusted_hash("SessionEnd", handler, matcher="") == (
        "sha256:7ad2413e1c0439d8c13486c0f78924c090b1242bf0ba27267e7088be51cd92f6")


def test_claude_install_keeps_other_settings_and_hooks(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"type": "command", "command": "~/bin/lint-prompt"}
    settings.write_text(json.dumps({"model": "opus", "hooks": {
        "UserPromptSubmit": [{"hooks": [theirs]}]}}))
    memsift("install", "claude-code", "--python", PYTHON)
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    groups = data["hooks"]["UserPromptSubmit"]
    assert groups[0]["hooks"] == [theirs]
    assert groups[1]["hooks"][0]["command"] == f"{PYTHON} -P -m memsift hook claude-code UserPromptSubmit"
    assert {event: data["hooks"][event][-1]["hooks"][0]["timeout"]
            for event in HOOK_TIMEOUTS_S} == HOOK_TIMEOUTS_S


def test_install_twice_changes_nothing_the_second_time(home, isolated_env):
    made = memsift("install", "claude-code", "--python", PYTHON)
    assert "made the models' caches" in made  # so the first prompt does not make them
    settings = home / ".claude" / "settings.json"
    first = settings.read_text()
    again = memsift("install", "claude-code", "--python", PYTHON)
    assert "already up to date" in again and "caches" not in again
    assert settings.read_text() == first


def test_uninstall_removes_only_memsift(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"hooks": [{"type": "command", "command": "~/bin/on-stop"}]}
    settings.write_text(json.dumps({"hooks": {"Stop": [theirs]}, "theme": "dark"}))
    memsift("install", "claude-code", "--python", PYTHON)
    memsift("uninstall", "claude-code")
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [theirs]}, "theme": "dark"}


def test_project_install_writes_the_project_settings(home, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    memsift("install", "claude-code", "--project", str(project), "--python", PYTHON)
    assert (project / ".claude" / "settings.json").exists()
    assert not (home / ".claude" / "settings.json").exists()


def test_dry_run_shows_the_diff_and_writes_nothing(home, isolated_env):
    out = memsift("install", "codex", "--python", PYTHON, "--dry-run")
    assert "+[hooks.state." in out and "memsift hook codex Stop" in out
    assert not (home / ".codex").exists()
    assert not (isolated_env / "cache").exists()


def test_codex_install_trusts_each_hook_and_keeps_the_users_toml(home):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# my settings\nmodel = "o3"  # the one I like\n')
    memsift("install", "codex", "--python", PYTHON)
    text = config.read_text()
    assert text.startswith('# my settings\nmodel = "o3"  # the one I like\n')
    state = tomllib.loads(text)["hooks"]["state"]
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    hooks_path = (home / ".codex" / "hooks.json").resolve()
    for event, snake in (("UserPromptSubmit", "user_prompt_submit"), ("Stop", "stop"),
                         ("SessionEnd", "session_end")):
        handler = hooks[event][0]["hooks"][0]
        assert state[f"{hooks_path}:{snake}:0:0"] == {
            "trusted_hash": codex_trusted_hash(event, handler)}


def test_codex_uninstall_moves_the_trust_of_hooks_that_shift(home):
    codex = home / ".codex"
    codex.mkdir()
    memsift("install", "codex", "--python", PYTHON)
    hooks_path = (codex / "hooks.json").resolve()
    data = json.loads(hooks_path.read_text())
    theirs = {"hooks": [{"type": "command", "command": "~/bin/after", "timeout": 5}]}
    data["hooks"]["Stop"].append(theirs)  # a hook of the user's after memsift's
    hooks_path.write_text(json.dumps(data))
    with (codex / "config.toml").open("a") as handle:
        handle.write(f'\n[hooks.state."{hooks_path}:stop:1:0"]\ntrusted_hash = "sha256:mine"\n')
    memsift("uninstall", "codex")
    assert json.loads(hooks_path.read_text()) == {"hooks": {"Stop": [theirs]}}
    state = tomllib.loads((codex / "config.toml").read_text())["hooks"]["state"]
    assert state == {f"{hooks_path}:stop:0:0": {"trusted_hash": "sha256:mine"}}


def test_install_refuses_a_settings_file_it_cannot_read(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    result = CliRunner().invoke(cli, ["install", "claude-code"])
    assert result.exit_code != 0 and "not valid JSON" in result.output
    assert settings.read_text() == "{ not json"


def test_plugin_hooks_use_the_installer_timeouts():
    for name, host in (("hooks.json", "claude-code"), ("codex-hooks.json", "codex")):
        hooks = json.loads((REPO / "hooks" / name).read_text())["hooks"]
        for event, timeout in HOOK_TIMEOUTS_S.items():
            handler = hooks[event][0]["hooks"][0]
            assert handler["timeout"] == timeout
            assert handler["command"].endswith(f"/hooks/run\" {host} {event}")
