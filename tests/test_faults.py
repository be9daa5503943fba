"""Faults of the outside services against real servers on 127.0.0.1: a Cognee stand-in and a
fake OpenAI-compatible endpoint. For each fault: the first prompt stays within its budget, the
next prompts cost what a prompt costs with the service paused (medians, within 50 ms), the
session is told once, a detached probe resumes the service when it answers again, and
`memsift status --json` shows it all."""

from __future__ import annotations

import json
import socket
import statistics
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.cognee_server import FakeCognee, Fault
from fakes.openai_server import FakeOpenAI, Reply, error_reply, probs_reply
from fakes.word_judge import WordJudge, hash_embedder

from memsift.cli import cli
from memsift.config import load_settings
from memsift.events import Event
from memsift.longterm.cognee import CogneeClient, CogneeStore, dataset_name
from memsift.memory.notes import Note, NotesFile, notes_path
from memsift.prompt.cascade import run_prompt
from memsift.prompt.policy import LOCAL_PROMPT_S
from memsift.services.health import Health

SLACK_S = 0.3  # thread hand-offs and a loaded CI machine, on top of the prompt budget
SAME_COST_MS = 50.0  # "the next prompts within 50 ms of the no-service time"
REPEATS = 5  # prompts per median
PROBE_EVERY_S = 0.3
# While the timings are measured no probe may start: on a 2-core machine a fresh Python
# process beside the prompt would be measured too.
NO_PROBE_S = 3600
RESUME_WAIT_S = 20.0  # a detached probe is a fresh Python process

PROMPT = "why do staging model names use a double underscore"
NOTE = "Staging model names use a double underscore between source and table."
PASSAGE = "We chose the double underscore for staging model names to mirror dbt docs."


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "riverbed"
    (root / ".git").mkdir(parents=True)
    return root


class Prompts:
    """Runs the real cascade in-process on one project and times it."""

    def __init__(self, project: Path, cognee: FakeCognee | None = None) -> None:
        self.project = project
        self.cognee = cognee

    def settings(self):
        return load_settings()

    def store(self, settings):
        if self.cognee is None:
            return None
        client = CogneeClient(settings["cognee.url"], settings["cognee.api_key"])
        return CogneeStore(client, dataset_name(settings, self.project),
                           float(settings["cognee.timeout_s"]))

    def run(self, session: str = "s1") -> tuple[float, str]:
        settings = self.settings()
        event = Event(host="claude-code", name="UserPromptSubmit", session_id=session,
                      cwd=str(self.project), prompt=PROMPT)
        judge = WordJudge() if self.cognee is not None else self.llm_judge(settings)
        store = self.store(settings)
        started = time.perf_counter()
        result = run_prompt(event, settings, judge=judge, store=store,
                            embedder=hash_embedder(), clock=time.perf_counter, started=started)
        spent = time.perf_counter() - started
        for used in (store, judge):
            if hasattr(used, "close"):
                used.close()
        return spent, result.context

    def llm_judge(self, settings):
        from memsift.judge.openai_compat import OpenAICompatJudge

        return OpenAICompatJudge.from_settings(settings)

    def median_ms(self, session: str) -> float:
        return statistics.median(self.run(session)[0] for _ in range(REPEATS)) * 1000


def status_json() -> dict:
    return json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)


def health() -> Health:
    return Health.for_settings(load_settings())


def no_service_ms(prompts: Prompts, service: str) -> float:
    """What a prompt costs with the service paused by the user: the reference."""
    health().pause(service)
    prompts.run("reference")  # the notice for this session goes out here, not in the median
    reference = prompts.median_ms("reference")
    health().resume(service)
    return reference


def wait_for_resume(prompts: Prompts, service: str, monkeypatch) -> None:
    """Let the probe interval pass; the next prompt starts a detached probe, which resumes
    the service once it answers."""
    monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", str(PROBE_EVERY_S))
    time.sleep(PROBE_EVERY_S * 1.2)
    prompts.run("probe-trigger")
    end = time.monotonic() + RESUME_WAIT_S
    while health().is_paused(service) and time.monotonic() < end:
        time.sleep(0.05)
    assert not health().is_paused(service), "the probe did not resume the service"


def check_outage(prompts: Prompts, service: str, reason: str, budget_s: float,
                 reference_ms: float) -> None:
    """The first prompt pays the fault within its budget and carries the notice; the next
    ones cost what a paused service costs and carry none."""
    first_s, first_context = prompts.run("s1")
    assert first_s <= budget_s + SLACK_S
    pause = health().pause_of(service)
    assert pause is not None and pause.reason == reason
    lines = first_context.splitlines()
    assert sum("[memsift]" in line for line in lines) == 1
    assert "paused since" in first_context and "work goes on" in first_context
    later = [prompts.run("s1") for _ in range(REPEATS)]
    assert all("[memsift]" not in context for _, context in later)
    later_ms = statistics.median(s for s, _ in later) * 1000
    assert abs(later_ms - reference_ms) <= SAME_COST_MS, (later_ms, reference_ms)
    shown = status_json()["services"][service]
    assert (shown["state"], shown["reason"], shown["sessions_told"]) == ("paused", reason, 1)


def check_resumed(service: str, reason: str) -> None:
    data = status_json()
    assert data["services"][service]["state"] == "ok"
    outage = data["outages"][-1]
    assert (outage["service"], outage["reason"], outage["resumed_by"]) == (
        service, reason, "probe")


# -- the long-term store (Cognee) ---------------------------------------------------------

@pytest.fixture
def cognee(monkeypatch, project):
    with FakeCognee() as server:
        monkeypatch.setenv("MEMSIFT_COGNEE_URL", server.url)
        monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", str(NO_PROBE_S))
        settings = load_settings()
        server.add_text(dataset_name(settings, project), PASSAGE)
        NotesFile(notes_path(settings, project)).append([Note(NOTE, id="n01")])
        yield server


def cognee_faults():
    def refused(server):
        server.stop()

    def back(server):
        server.fault = Fault()
        if server._httpd is None:
            server.start()

    return [
        pytest.param(refused, "refused", id="refused"),
        pytest.param(lambda s: setattr(s, "fault", Fault(hang=True)), "timeout", id="hung"),
        pytest.param(lambda s: setattr(s, "fault", Fault(delay_s=LOCAL_PROMPT_S * 0.85)),
                     "slow", id="slow-near-deadline"),
        pytest.param(lambda s: setattr(s, "fault", Fault(status=500)), "server", id="500"),
        pytest.param(lambda s: setattr(s, "fault", Fault(status=401)), "auth", id="401"),
    ], back


FAULTS, RECOVER = cognee_faults()


@pytest.mark.parametrize("fault,reason", FAULTS)
def test_a_cognee_fault_costs_its_budget_once_then_nothing(cognee, project, monkeypatch, fault,
                                                           reason):
    prompts = Prompts(project, cognee)
    _, healthy = prompts.run("warm")
    assert NOTE in healthy and PASSAGE in healthy  # both sources answer when all is well
    reference = no_service_ms(prompts, "longterm")
    fault(cognee)
    check_outage(prompts, "longterm", reason, LOCAL_PROMPT_S, reference)
    calls = cognee.recall_count()
    _, context = prompts.run("during")  # a new session: nothing given to it yet
    assert NOTE in context  # the local notes still answer while Cognee is paused
    assert cognee.recall_count() == calls  # and Cognee is not asked
    RECOVER(cognee)
    wait_for_resume(prompts, "longterm", monkeypatch)
    _, context = prompts.run("after")
    assert PASSAGE in context
    check_resumed("longterm", reason)


def test_a_flapping_cognee_is_probed_less_and_less_often(cognee, project, monkeypatch):
    monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", str(PROBE_EVERY_S))
    prompts = Prompts(project, cognee)
    for _ in range(3):
        cognee.fault = Fault(status=503)
        prompts.run("s1")
        assert health().is_paused("longterm")
        cognee.fault = Fault()
        health().resume("longterm", by="probe")  # as a probe would on the next answer
    cognee.fault = Fault(status=503)
    spent, _ = prompts.run("s1")
    assert spent <= LOCAL_PROMPT_S + SLACK_S
    shown = status_json()["services"]["longterm"]
    assert shown["probe_every_s"] == PROBE_EVERY_S * 8  # three flaps: doubled three times
    assert [o["reason"] for o in status_json()["outages"]] == ["server"] * 3


# -- the LLM endpoint ---------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FakeOpenAIOnPort(FakeOpenAI):
    """The fake endpoint on a chosen port, so it can come back where clients expect it."""

    port: int = 0

    def start(self):
        from fakes.openai_server import _Handler

        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        import threading

        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self


def healthy_reply(body) -> Reply:
    return probs_reply({"A": 0.9, "B": 0.1})  # "a reaction": no memory needed


@pytest.fixture
def llm(monkeypatch):
    server = FakeOpenAIOnPort(api_key="right", on_chat=healthy_reply)
    server.port = free_port()
    monkeypatch.setenv("MEMSIFT_LLM_BASE_URL", f"http://127.0.0.1:{server.port}/v1")
    monkeypatch.setenv("MEMSIFT_LLM_API_KEY", "right")
    monkeypatch.setenv("MEMSIFT_LLM_MODEL", "fake-judge-1")
    monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", str(NO_PROBE_S))
    server.start()
    yield server
    server.stop()


LLM_BUDGET_S = 2.0  # budget.prompt_s with an LLM configured


def llm_faults():
    def refused(server, monkeypatch):
        server.stop()

    def reply(make):
        def apply(server, monkeypatch):
            server.on_chat = lambda body: make()
        return apply

    def bad_key(server, monkeypatch):
        monkeypatch.setenv("MEMSIFT_LLM_API_KEY", "wrong")

    return [
        pytest.param(refused, "refused", id="refused"),
        pytest.param(reply(lambda: Reply(hang=True)), "timeout", id="hung"),
        pytest.param(reply(lambda: probs_reply({"A": 0.9, "B": 0.1}, delay_s=0.53)), "slow",
                     id="slow-near-deadline"),
        pytest.param(reply(lambda: error_reply(500)), "server", id="500"),
        pytest.param(bad_key, "auth", id="401"),
    ]


@pytest.mark.parametrize("fault,reason", llm_faults())
def test_an_llm_fault_costs_its_budget_once_then_nothing(llm, project, monkeypatch, fault,
                                                         reason):
    prompts = Prompts(project)
    prompts.run("warm")  # the first one in a process pays the client's imports
    prompts.run("warm")
    assert llm.chat_requests()  # the endpoint is asked when all is well
    reference = no_service_ms(prompts, "llm")
    fault(llm, monkeypatch)
    check_outage(prompts, "llm", reason, LLM_BUDGET_S, reference)
    asked = len(llm.chat_requests())
    prompts.run("s1")
    assert len(llm.chat_requests()) == asked  # paused: not asked
    llm.on_chat = healthy_reply
    monkeypatch.setenv("MEMSIFT_LLM_API_KEY", "right")
    if llm._httpd is None or reason == "refused":
        llm.start()
    wait_for_resume(prompts, "llm", monkeypatch)
    prompts.run("s1")
    assert len(llm.chat_requests()) > asked + 1  # the probe, then the prompt itself
    check_resumed("llm", reason)


def test_while_the_llm_is_paused_the_local_judge_decides(llm, project):
    """No LLM, no silence: the cascade asks the offline judge instead, and the endpoint is
    not called."""
    from memsift.audit import read_audit

    NotesFile(notes_path(load_settings(), project)).append([Note(NOTE, id="n01")])
    health().report_failure("llm", "timeout", "no answer in 0.60s")
    event = Event(host="claude-code", name="UserPromptSubmit", session_id="s1",
                  cwd=str(project), prompt=PROMPT)
    for _ in range(2):  # the first one in a process loads the offline model
        run_prompt(event, load_settings())
    steps = {s["name"]: s["result"] for s in read_audit(1)[0]["steps"]}
    assert steps["judge"] == "local: llm paused"
    assert not steps["kind"].startswith("skipped")
    assert llm.chat_requests() == []
