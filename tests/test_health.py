"""Outages and pauses: the state file, notices, probes and the user's pause."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fakes.cognee_server import FakeCognee, Fault
from fakes.openai_server import FakeOpenAI, error_reply, text_reply

from memsift.clock import DeadlineExceeded
from memsift.config import load_settings
from memsift.longterm.base import LongTermError
from memsift.services.health import Health
from memsift.services.pause import classify
from memsift.services.probes import HealthError, probe_llm, probe_longterm

T0 = datetime(2026, 11, 20, 14, 2, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def spawned():
    return []


@pytest.fixture
def health(tmp_path, clock, spawned):
    return Health(tmp_path / "data", probe_every_s=30, clock=clock, spawn_probe=spawned.append)


@pytest.fixture
def cognee():
    with FakeCognee() as server:
        yield server


def test_a_service_is_healthy_until_it_fails(health):
    assert health.guard("longterm") is True
    assert not health.path.exists()  # nothing written while all is well


def test_a_timeout_pauses_the_service_with_its_reason_and_time(health):
    assert health.report_failure("longterm", LongTermError("no answer", reason="timeout"))
    pause = health.pause_of("longterm")
    assert pause is not None
    assert (pause.reason, pause.by, pause.since) == ("timeout", "fault", T0.isoformat())
    assert health.guard("longterm") is False
    assert health.guard("llm") is True  # the other service still works


@pytest.mark.parametrize("reason", ["refused", "timeout", "server", "auth"])
def test_each_outage_reason_pauses(health, reason):
    health.report_failure("llm", LongTermError("x", reason=reason))
    assert health.is_paused("llm")


def test_a_bad_reply_is_not_an_outage(health):
    assert health.report_failure("llm", LongTermError("garbled", reason="bad_reply")) is False
    assert not health.is_paused("llm")


def test_foreign_errors_are_classified_at_the_boundary():
    request = httpx.Request("GET", "http://127.0.0.1:9/")
    assert classify(httpx.ConnectTimeout("slow", request=request)) == "timeout"
    assert classify(httpx.ConnectError("refused", request=request)) == "refused"
    assert classify(DeadlineExceeded("spent")) == "timeout"
    assert classify(ConnectionRefusedError()) == "refused"
    for status, reason in [(401, "auth"), (403, "auth"), (500, "server"), (503, "server")]:
        response = httpx.Response(status, request=request)
        exc = httpx.HTTPStatusError("bad", request=request, response=response)
        assert classify(exc) == reason
    assert classify(ValueError("odd")) == "error"


def test_the_session_is_told_once_per_outage(health, clock):
    health.report_failure("longterm", LongTermError("refused", reason="refused"))
    line = health.notice_for_session("s1")
    assert "long-term memory paused since 14:02 UTC" in line
    assert "connection refused" in line and "work goes on" in line
    assert "\n" not in line
    assert health.notice_for_session("s1") == ""
    assert health.notice_for_session("s2") != ""  # another session is told too
    health.resume("longterm", by="probe")
    clock.advance(60)
    health.report_failure("longterm", LongTermError("again", reason="timeout"))
    assert "no answer in time" in health.notice_for_session("s1")  # a new outage: told again


def test_two_outages_make_one_line(health):
    health.report_failure("longterm", "refused")
    health.report_failure("llm", "auth")
    line = health.notice_for_session("s1")
    assert line.count("\n") == 0
    assert "long-term memory" in line and "LLM decision model" in line


def test_a_probe_is_started_at_most_once_per_interval(health, clock, spawned):
    health.report_failure("longterm", "timeout")
    assert health.guard("longterm") is False
    assert spawned == []  # the failure itself is fresh news
    clock.advance(31)
    for _ in range(5):
        assert health.guard("longterm") is False
    assert spawned == ["longterm"]
    clock.advance(31)
    health.guard("longterm")
    assert spawned == ["longterm", "longterm"]


def test_a_flapping_service_is_probed_less_often(health, clock, spawned):
    for _ in range(3):  # down, up soon after, down again...
        health.report_failure("llm", "server")
        clock.advance(5)
        health.resume("llm", by="probe")
        clock.advance(5)
    health.report_failure("llm", "server")
    clock.advance(31)
    health.guard("llm")
    assert spawned == []  # three flaps: the interval has doubled three times
    assert health.snapshot()["services"]["llm"]["probe_every_s"] == 240
    clock.advance(240)
    health.guard("llm")
    assert spawned == ["llm"]


def test_a_success_on_the_prompt_path_ends_a_fault_pause(health):
    health.report_failure("longterm", "timeout")
    health.report_success("longterm")
    assert not health.is_paused("longterm")
    [outage] = health.history()
    assert (outage["start"], outage["reason"], outage["resumed_by"]) == (
        T0.isoformat(), "timeout", "answer")


def test_a_user_pause_expires_and_lands_in_the_history(health, clock, spawned):
    health.pause("longterm", for_s=3600)
    assert health.guard("longterm") is False
    health.report_success("longterm")  # an answer does not override the user
    assert health.is_paused("longterm")
    assert "until 15:02 UTC" in health.notice_for_session("s1")
    clock.advance(3601)
    assert health.guard("longterm") is True
    assert spawned == []  # never probed: the user decides
    [outage] = health.history()
    assert outage["paused_by"] == "user"
    assert outage["end"] == (T0 + timedelta(hours=1)).isoformat()


def test_a_user_resume_ends_any_pause(health):
    health.report_failure("llm", "auth")
    assert health.resume("llm") is True
    assert health.resume("llm") is False
    assert health.history()[-1]["resumed_by"] == "user"


def test_a_corrupt_state_file_pauses_nothing(health):
    health.path.parent.mkdir(parents=True)
    health.path.write_text("{not json")
    assert health.guard("longterm") is True
    health.report_failure("longterm", "refused")  # and it is replaced by a good one
    assert json.loads(health.path.read_text())["services"]["longterm"]["reason"] == "refused"


def _settings(monkeypatch, **env: str):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_settings()


def test_the_longterm_probe_reads_health_and_a_tiny_recall(cognee, monkeypatch):
    settings = _settings(monkeypatch, MEMSIFT_COGNEE_URL=cognee.url)
    probe_longterm(settings, 2.0)
    assert ("GET", "/health") in cognee.requests and cognee.recall_count() == 1


@pytest.mark.parametrize("fault,reason", [
    (Fault(status=500), "server"), (Fault(status=401), "auth"), (Fault(hang=True), "timeout"),
])
def test_the_longterm_probe_reports_why_the_server_is_down(cognee, monkeypatch, fault, reason):
    settings = _settings(monkeypatch, MEMSIFT_COGNEE_URL=cognee.url)
    cognee.fault = fault
    with pytest.raises(HealthError) as caught:
        probe_longterm(settings, 0.3)
    assert caught.value.reason == reason


def test_the_longterm_probe_sees_a_refused_connection(cognee, monkeypatch):
    settings = _settings(monkeypatch, MEMSIFT_COGNEE_URL=cognee.url)
    cognee.stop()
    with pytest.raises(HealthError) as caught:
        probe_longterm(settings, 0.5)
    assert caught.value.reason == "refused"


def test_the_llm_probe_is_a_one_token_completion(monkeypatch):
    with FakeOpenAI(api_key="k1") as server:
        settings = _settings(monkeypatch, MEMSIFT_LLM_BASE_URL=server.url,
                             MEMSIFT_LLM_API_KEY="k1", MEMSIFT_LLM_MODEL="m")
        server.script(text_reply("p"), error_reply(503))
        probe_llm(settings, 2.0)
        assert server.chat_requests()[0].body["max_tokens"] == 1
        with pytest.raises(HealthError) as caught:
            probe_llm(settings, 2.0)
        assert caught.value.reason == "server"
        monkeypatch.setenv("MEMSIFT_LLM_API_KEY", "wrong")
        with pytest.raises(HealthError) as caught:
            probe_llm(load_settings(), 2.0)
        assert caught.value.reason == "auth"


def test_a_probe_resumes_the_service_when_it_answers_again(cognee, monkeypatch, health):
    settings = _settings(monkeypatch, MEMSIFT_COGNEE_URL=cognee.url)
    cognee.fault = Fault(status=502)
    health.report_failure("longterm", "server")
    assert health.run_probe("longterm", settings) is False
    assert health.snapshot()["services"]["longterm"]["probes"] == 1
    cognee.fault = Fault()
    assert health.run_probe("longterm", settings) is True
    assert not health.is_paused("longterm")
    assert health.history()[-1]["resumed_by"] == "probe"


def test_the_detached_probe_process_resumes_the_service(cognee, monkeypatch, isolated_env):
    monkeypatch.setenv("MEMSIFT_COGNEE_URL", cognee.url)
    settings = load_settings()
    health = Health.for_settings(settings)
    health.report_failure("longterm", "refused")
    subprocess.run([sys.executable, "-m", "memsift.services.health", "probe", "longterm"],
                   check=True, timeout=30)
    assert not health.is_paused("longterm")


def test_concurrent_processes_share_one_outage(tmp_path):
    """Eight processes report the same outage at once: one pause, one outage id, a state
    file that stays valid JSON."""
    script = (
        "import sys, pathlib; from memsift.services.health import Health;"
        "h = Health(pathlib.Path(sys.argv[1]), spawn_probe=lambda s: None);"
        "[h.report_failure('longterm', 'timeout') for _ in range(20)];"
        "[h.notice_for_session(sys.argv[2]) for _ in range(5)]"
    )
    data = tmp_path / "shared"
    procs = [subprocess.Popen([sys.executable, "-c", script, str(data), f"s{i}"])
             for i in range(8)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    state = json.loads((data / "health.json").read_text())
    assert sorted(state["services"]["longterm"]["told"]) == sorted(f"s{i}" for i in range(8))




GUARD_ON_A_FULL_DISK = """
import resource, signal, sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from memsift.services.guard import PromptGuard
from memsift.services.health import Health
from memsift.longterm.base import LongTermError

at = [datetime(2026, 11, 20, 14, 2, tzinfo=timezone.utc)]
health = Health(Path(sys.argv[1]), clock=lambda: at[0], spawn_probe=lambda s: None)
health.pause("longterm", for_s=60)
at[0] += timedelta(seconds=120)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))  # no file may grow past 16 bytes
guard = PromptGuard(health, remote=lambda s: True)
assert guard.allows("longterm") is True  # the expired pause is over, unwritten or not
guard.failed("longterm", LongTermError("down", reason="refused"), 1.0)
assert guard.allows("longterm") is False  # this prompt stops calling it all the same
assert guard.notice("s1") == ""
print("ok")
"""


def test_the_prompt_guard_never_raises_when_the_state_cannot_be_written(tmp_path):
    """A full disk (here a real file size limit): the prompt goes on, a user pause that has
    expired is over, and a failure still stops this prompt's calls to the service."""
    done = subprocess.run([sys.executable, "-c", GUARD_ON_A_FULL_DISK, str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
