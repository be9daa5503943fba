"""The real claude CLI with memsift's plugin, its decision model on System One: the stand-in
server on 127.0.0.1 (memsift.bench.decision_server) judges the session. A note that answers
reaches the model, an unrelated prompt gets nothing, and the stand-in saw one request per
item judged (each holding that item alone)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
from fakes.anthropic_server import FakeAnthropicServer
from fakes.polling import PATIENT_BUDGET

from e2e.hostenv import claude_env
from memsift.audit import read_audit
from memsift.bench.systemone_server import SystemOneServer

pytestmark = pytest.mark.e2e

CLI_TIMEOUT_S = 120
NOTES = {"n42": "The staging database listens on port 6543, not the default 5432.",
         "n43": "Release notes are written on Fridays by the on-call engineer."}
ANSWERED = "Which port does the staging database listen on?"
UNRELATED = "Write a haiku about autumn leaves."


@pytest.fixture
def project(tmp_path, isolated_env):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    data = tmp_path / "memory.json"
    data.write_text(json.dumps({"notes": [{"id": k, "text": v, "written": "2026-10-01"}
                                          for k, v in NOTES.items()], "memory": []}))
    subprocess.run([sys.executable, "-m", "memsift", "import", str(data), "--project",
                    str(root)], check=True, capture_output=True, timeout=CLI_TIMEOUT_S)
    return root


def _ask(claude_bin, plugin_copy, project, tmp_path, prompt, monkeypatch):
    """(what reached the model, the stand-in's item requests for this prompt)."""
    monkeypatch.setenv("MEMSIFT_PYTHON", sys.executable)
    with FakeAnthropicServer() as model, SystemOneServer(api_key="ts-e2e") as judge:
        env = claude_env(tmp_path / "home", model.url) | PATIENT_BUDGET | {
            "MEMSIFT_JUDGE_BACKEND": "systemone", "MEMSIFT_JUDGE_BASE_URL": judge.url,
            "TYPESAFE_API_KEY": "ts-e2e"}  # the provider's own variable, read by memsift
        done = subprocess.run(
            [claude_bin, "-p", prompt, "--output-format", "json", "--plugin-dir",
             str(plugin_copy)], env=env, cwd=project, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False)
        bodies = model.message_bodies()
        items = [r.body["state"]["item"] for r in judge.item_requests()]
        statuses = {r.status for r in judge.decisions()}
    assert done.returncode == 0, done.stderr[-2000:]
    assert any(prompt in body for body in bodies)
    assert statuses == {200}  # every request of memsift's passed the stand-in's validation
    return "\n".join(bodies), items


def test_a_note_that_answers_reaches_the_model_judged_by_system_one(
        claude_bin, plugin_copy, project, tmp_path, monkeypatch):
    sent, items = _ask(claude_bin, plugin_copy, project, tmp_path, ANSWERED, monkeypatch)
    assert "memsift-memory" in sent and "6543" in sent and "n42" in sent
    assert "Fridays" not in sent
    assert Counter(items) == Counter(NOTES.values())  # one request per note, each alone
    decision = read_audit(1)[0]
    assert decision["judge"]["backend"] == "systemone"
    assert "judge" not in {s["name"] for s in decision["steps"]}  # no hand-over to local


def test_an_unrelated_prompt_gets_nothing_from_system_one(
        claude_bin, plugin_copy, project, tmp_path, monkeypatch):
    sent, items = _ask(claude_bin, plugin_copy, project, tmp_path, UNRELATED, monkeypatch)
    assert "memsift-memory" not in sent and "6543" not in sent
    assert len(items) == len(set(items))  # never one item twice, never two in one request
    assert read_audit(1)[0]["kind"] == "instruction"
