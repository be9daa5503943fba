"""Every fault of a remote decision model, through the real hook process: exit 0, nothing from
the remote, the local judge's answer instead, one notice per session for an outage, and
`memsift status` says why. The remote is a stand-in server on 127.0.0.1 failing every
request the way a real one does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from fakes.polling import PATIENT_BUDGET

from memsift.audit import read_audit
from memsift.bench.decision_server import Fault
from memsift.bench.openai_decisions_server import OpenAIDecisionsServer
from memsift.bench.systemone_server import SystemOneServer
from memsift.cli import cli
from memsift.config import load_settings
from memsift.memory.notes import Note, NotesFile, notes_path

HOOK_TIMEOUT_S = 60  # a run takes about a second; this only stops a hung hook
NOTE = "The staging database listens on port 6543, not the default 5432."
PROMPT = "Which port does the staging database listen on?"
EVERY_REQUEST = 200  # the fault answers this many requests: an outage, not one bad reply
NOTICE = "[memsift] the remote decision model"
# The local judge's answer must not depend on how loaded the test machine is: the reference
# run and the runs after a fault both get time enough.


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "riverbed"
    (root / ".git").mkdir(parents=True)
    NotesFile(notes_path(load_settings(), root)).append([Note(NOTE, id="n42")])
    return root


def hook(project, session: str) -> tuple[int, str]:
    payload = json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit",
                          "cwd": str(project), "prompt": PROMPT})
    done = subprocess.run([sys.executable, "-m", "memsift", "hook", "claude-code",
                           "UserPromptSubmit"], input=payload, capture_output=True, text=True,
                          timeout=HOOK_TIMEOUT_S, check=False)
    return done.returncode, done.stdout


def context(stdout: str) -> str:
    return json.loads(stdout)["hookSpecificOutput"]["additionalContext"] if stdout else ""


def memory_part(added: str) -> str:
    """What was added, the outage notice aside."""
    return "\n".join(line for line in added.splitlines() if not line.startswith("[memsift]"))


def local_answer(project, monkeypatch) -> str:
    """What the local judge adds for the prompt, in a session of its own."""
    with monkeypatch.context() as local:
        local.setenv("MEMSIFT_JUDGE_BACKEND", "local")
        code, out = hook(project, "reference")
    assert code == 0
    return context(out)


def steps() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for step in read_audit(1)[0]["steps"]:
        found.setdefault(step["name"], []).append(step["result"])
    return found


def status() -> dict:
    return json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)


FAULTS = [
    pytest.param(SystemOneServer, Fault(status=401), "auth", True, id="401"),
    pytest.param(SystemOneServer, Fault(status=429, headers={"retry-after": "120"}),
                 "rate_limited", True, id="429-retry-after"),
    pytest.param(SystemOneServer, Fault(status=529, headers={"retry-after-ms": "90000"}),
                 "overloaded", True, id="529"),
    pytest.param(SystemOneServer, Fault(status=500), "server", True, id="500"),
    pytest.param(SystemOneServer, Fault(hang=True), "timeout", True, id="hang"),
    pytest.param(SystemOneServer, Fault(status=200, cut=True), "server", True, id="cut-reply"),
    pytest.param(SystemOneServer, Fault(status=422, body={"detail": [
        {"loc": ["body", "state"], "msg": "state too long", "type": "value_error"}]}),
        "rejected", False, id="422"),
    pytest.param(OpenAIDecisionsServer, Fault(refuse=True), "bad_reply", False, id="refusal"),
    pytest.param(OpenAIDecisionsServer, Fault(status=401), "auth", True, id="openai-401"),
]


@pytest.mark.parametrize("server_class,fault,reason,pauses", FAULTS)
def test_a_remote_judge_fault_leaves_the_local_judges_answer(
        project, monkeypatch, server_class, fault, reason, pauses):
    with server_class(api_key="k") as server:
        backend = "systemone" if server_class is SystemOneServer else "openai-decisions"
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", backend)
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", server.url)
        monkeypatch.setenv("MEMSIFT_JUDGE_API_KEY", "k")
        monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", "3600")  # no probe during the test
        for name, value in PATIENT_BUDGET.items():
            monkeypatch.setenv(name, value)
        reference = local_answer(project, monkeypatch)
        server.fail(*[fault] * EVERY_REQUEST)

        code, out = hook(project, "s1")
        assert code == 0
        first = context(out)
        assert memory_part(first) == reference  # nothing from the remote: the local answer
        assert any(r.startswith("local: kind failed") for r in steps()["judge"])
        assert (NOTICE in first) == pauses
        asked = len(server.decisions())

        code, out = hook(project, "s1")
        assert code == 0
        assert NOTICE not in context(out)  # told once per session
        if pauses:
            assert steps()["judge"] == ["local: decisions paused"]
            assert len(server.decisions()) == asked  # paused: not asked
            code, out = hook(project, "s2")
            assert NOTICE in context(out)  # another session is told too

    shown = status()
    service = shown["services"]["decisions"]
    assert service["backend"].startswith(backend)
    if pauses:
        assert service["state"] == "paused" and service["reason"] == reason
        assert service["detail"]
        if fault.headers:
            assert service["until"]  # the server's Retry-After ends the pause by itself
    else:
        assert service["state"] == "ok"
        errors = " ".join(e for d in shown["decisions"] for e in d["errors"])
        assert "kind: judge:" in errors
        if reason == "rejected":
            assert "body.state: state too long" in errors  # the server's own detail


def test_a_rate_limit_pause_ends_when_retry_after_has_passed(project, monkeypatch):
    with SystemOneServer(api_key="k") as server:
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", server.url)
        monkeypatch.setenv("MEMSIFT_JUDGE_API_KEY", "k")
        monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", "3600")
        server.fail(*[Fault(status=429, headers={"retry-after": "60"})] * EVERY_REQUEST)
        hook(project, "s1")
        assert status()["services"]["decisions"]["state"] == "paused"
        server.faults.clear()
        asked = len(server.decisions())
        monkeypatch.setenv("MEMSIFT_NOW", "2099-01-01T00:00:00+00:00")  # long past the minute
        code, _ = hook(project, "s2")
        assert code == 0
        assert "judge" not in steps()  # the remote judge decided again
        assert len(server.decisions()) > asked
        assert status()["services"]["decisions"]["state"] == "ok"


def test_a_probe_resumes_the_remote_judge_once_it_answers(project, monkeypatch):
    from memsift.services.health import Health

    with SystemOneServer(api_key="k") as server:
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", server.url)
        monkeypatch.setenv("MEMSIFT_JUDGE_API_KEY", "k")
        monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", "3600")
        server.fail(*[Fault(status=500)] * EVERY_REQUEST)
        hook(project, "s1")
        health = Health.for_settings(load_settings())
        assert health.is_paused("decisions")
        assert not health.run_probe("decisions", load_settings())  # still failing
        server.faults.clear()
        assert health.run_probe("decisions", load_settings())
        assert not health.is_paused("decisions")
        probe = server.decisions()[-1].body
        assert list(probe["questions"]) == ["worth"]  # one small question, as the path asks
    history = status()["outages"]
    assert history[-1]["service"] == "decisions" and history[-1]["resumed_by"] == "probe"
