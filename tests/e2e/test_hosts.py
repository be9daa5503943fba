"""The real `claude` and `codex` binaries, a fake model server on 127.0.0.1 that records what
reaches the model, and memsift's hooks installed each way a user can install them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropicServer
from fakes.responses_server import FakeResponsesServer

from e2e.hostenv import claude_env, codex_env
from memsift.session_end.worker import done_marker

pytestmark = pytest.mark.e2e

PROMPT = "Which port does the staging database use?"
CLI_TIMEOUT_S = 120  # a run takes about a second; this only stops a hung CLI
WORKER_WAIT_S = 30  # the detached worker reads one small transcript


def run(cmd: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=CLI_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{cmd[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def claude_prompt(claude_bin, env, project, *extra: str) -> dict:
    done = run([claude_bin, "-p", PROMPT, "--output-format", "json", *extra], env, project)
    return json.loads(done.stdout)


def codex_prompt(codex_bin, env, project, *extra: str) -> None:
    run([codex_bin, "exec", "--skip-git-repo-check", *extra, PROMPT], env, project)


def memsift(*args: str, env: dict) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "memsift", *args], env, Path.cwd())


def wait_for(path: Path, event: str = "SessionEnd", seconds: float = WORKER_WAIT_S) -> dict:
    """The worker's done marker once it records `event` (the session's last hand-off)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists():
            marker = json.loads(path.read_text())
            if marker.get("event") == event:
                return marker
        time.sleep(0.1)
    raise AssertionError(f"{path} never recorded {event}")


def log_lines(home: Path) -> list[str]:
    log = home / "logs" / "memsift.log"
    return log.read_text().splitlines() if log.exists() else []


# ---- (1) the hook's output reaches the model, each install route ----

def test_claude_plugin_dir_hook_output_reaches_the_model(
        claude_bin, plugin_copy, stand_in_python, project, tmp_path, monkeypatch):
    python, marker, calls = stand_in_python
    monkeypatch.setenv("MEMSIFT_PYTHON", python)
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url)
        claude_prompt(claude_bin, env, project, "--plugin-dir", str(plugin_copy))
        bodies = server.message_bodies()
    assert any(marker in body for body in bodies)
    assert "-P -m memsift hook claude-code UserPromptSubmit" in calls()


def test_claude_marketplace_install_hook_output_reaches_the_model(
        claude_bin, plugin_copy, stand_in_python, project, tmp_path, monkeypatch):
    python, marker, _ = stand_in_python
    monkeypatch.setenv("MEMSIFT_PYTHON", python)
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url)
        run([claude_bin, "plugin", "marketplace", "add", str(plugin_copy)], env, project)
        run([claude_bin, "plugin", "install", "memsift@memsift"], env, project)
        claude_prompt(claude_bin, env, project)
        bodies = server.message_bodies()
    assert any(marker in body for body in bodies)


def test_codex_plugin_marketplace_hook_output_reaches_the_model(
        codex_bin, plugin_copy, stand_in_python, project, tmp_path, monkeypatch):
    python, marker, calls = stand_in_python
    monkeypatch.setenv("MEMSIFT_PYTHON", python)
    with FakeResponsesServer() as server:
        env = codex_env(tmp_path / "home", server.url, plugins=True)
        run([codex_bin, "plugin", "marketplace", "add", str(plugin_copy)], env, project)
        run([codex_bin, "plugin", "add", "memsift@memsift"], env, project)
        # Plugin hooks are trusted in Codex's /hooks review, which a test cannot click.
        codex_prompt(codex_bin, env, project, "--dangerously-bypass-hook-trust")
        bodies = server.response_bodies()
    assert any(marker in body for body in bodies)
    assert "-P -m memsift hook codex UserPromptSubmit" in calls()


def test_claude_memsift_install_hook_output_reaches_the_model(
        claude_bin, stand_in_python, project, tmp_path):
    python, marker, _ = stand_in_python
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url)
        memsift("install", "claude-code", "--python", python, env=env)
        claude_prompt(claude_bin, env, project)
        bodies = server.message_bodies()
    assert any(marker in body for body in bodies)


def test_codex_memsift_install_hooks_run_without_any_trust_bypass(
        codex_bin, stand_in_python, project, tmp_path):
    python, marker, calls = stand_in_python
    with FakeResponsesServer() as server:
        env = codex_env(tmp_path / "home", server.url)
        memsift("install", "codex", "--python", python, env=env)
        codex_prompt(codex_bin, env, project)  # untrusted hooks would be skipped silently
        bodies = server.response_bodies()
    assert any(marker in body for body in bodies)
    assert any("Stop" in call for call in calls())


def test_codex_project_install_runs_in_a_trusted_project(
        codex_bin, stand_in_python, project, tmp_path):
    python, marker, _ = stand_in_python
    with FakeResponsesServer() as server:
        env = codex_env(tmp_path / "home", server.url)
        out = memsift("install", "codex", "--project", str(project), "--python", python,
                      env=env).stdout
        assert "trusted project" in out  # Codex skips project hooks until the user trusts it
        with open(Path(env["CODEX_HOME"]) / "config.toml", "a") as config:
            config.write(f'\n[projects."{project.resolve()}"]\ntrust_level = "trusted"\n')
        codex_prompt(codex_bin, env, project)
        bodies = server.response_bodies()
    assert any(marker in body for body in bodies)


# ---- (2) session end: the hook hands off inside the budget, the worker finishes ----

def test_claude_session_end_worker_reads_the_transcript(
        claude_bin, project, tmp_path, isolated_env):
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url)
        memsift("install", "claude-code", env=env)
        session = claude_prompt(claude_bin, env, project)["session_id"]
    marker = wait_for(done_marker(isolated_env / "data", session))
    assert marker["turns"] == 2 and marker["host"] == "claude-code"
    assert not [line for line in log_lines(isolated_env) if " ERROR " in line]


def test_codex_session_end_worker_reads_the_transcript(
        codex_bin, project, tmp_path, isolated_env):
    with FakeResponsesServer() as server:
        env = codex_env(tmp_path / "home", server.url)
        memsift("install", "codex", env=env)
        codex_prompt(codex_bin, env, project)
    sessions = list((Path(env["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl"))
    session = json.loads(sessions[0].read_text().splitlines()[0])["payload"]["id"]
    marker = wait_for(done_marker(isolated_env / "data", session))
    assert marker["turns"] == 2 and marker["host"] == "codex"


# ---- (3) garbage into the hook: the prompt goes through unchanged ----

def _garbage_hooks(host: str) -> dict:
    command = (f"printf 'not json {{' | {sys.executable} -P -m memsift hook {host} "
               "UserPromptSubmit")
    return {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": command, "timeout": 10}]}]}}


def test_claude_prompt_goes_through_unchanged_when_the_hook_gets_garbage(
        claude_bin, project, tmp_path, isolated_env):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(_garbage_hooks("claude-code")))
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url)
        reply = claude_prompt(claude_bin, env, project, "--settings", str(settings))
        bodies = server.message_bodies()
    assert reply["result"] == "ok" and any(PROMPT in body for body in bodies)
    assert not any("additionalContext" in body or "hook_additional_context" in body
                   for body in bodies)
    assert [line for line in log_lines(isolated_env) if "not valid JSON" in line]


def test_codex_prompt_goes_through_unchanged_when_the_hook_gets_garbage(
        codex_bin, project, tmp_path, isolated_env):
    with FakeResponsesServer() as server:
        env = codex_env(tmp_path / "home", server.url)
        (Path(env["CODEX_HOME"]) / "hooks.json").write_text(json.dumps(_garbage_hooks("codex")))
        codex_prompt(codex_bin, env, project, "--dangerously-bypass-hook-trust")
        requests = [json.loads(body) for body in server.response_bodies()]
    assert len(requests) == 1
    messages = [item for item in requests[0]["input"] if item.get("type") == "message"]
    assert messages[-1]["role"] == "user"  # no developer message added after the prompt
    assert messages[-1]["content"][0]["text"] == PROMPT
    assert [line for line in log_lines(isolated_env) if "not valid JSON" in line]


# ---- memsift's own prompt hook through the plugin route ----

def test_claude_plugin_runs_memsift_prompt_hook_without_errors(
        claude_bin, plugin_copy, project, tmp_path, isolated_env, monkeypatch):
    monkeypatch.setenv("MEMSIFT_PYTHON", sys.executable)
    with FakeAnthropicServer() as server:
        env = claude_env(tmp_path / "home", server.url)
        session = claude_prompt(claude_bin, env, project, "--plugin-dir",
                                str(plugin_copy))["session_id"]
        bodies = server.message_bodies()
    assert any(PROMPT in body for body in bodies)
    wait_for(done_marker(isolated_env / "data", session))
    assert not [line for line in log_lines(isolated_env) if " ERROR " in line]
