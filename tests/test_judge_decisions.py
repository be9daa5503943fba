"""The System One and OpenAI Decisions judges against the stand-in servers on 127.0.0.1: what
each question puts on the wire, that items are judged one per request and at once, how every
server fault becomes a JudgeError reason, the settings that choose a backend, and that the
prompt path's backend module stays as light as httpx."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from memsift.bench.decision_server import Fault
from memsift.bench.openai_decisions_server import OpenAIDecisionsServer
from memsift.bench.systemone_server import SystemOneServer
from memsift.clock import Deadline
from memsift.config import judge_backend, load_settings
from memsift.judge import get_judge
from memsift.judge.base import KIND_DESCRIPTIONS, KINDS, JudgeError
from memsift.judge.openai_decisions import OpenAIDecisionsJudge
from memsift.judge.systemone import THRESHOLD, SystemOneJudge, default_model

MESSAGE = "Which port does the staging database listen on?"
NOTE = "The staging database listens on port 6543, not the default 5432."
OTHER = "Release notes are written on Fridays."
LATENCY_S = 0.3


def systemone(server, **kwargs) -> SystemOneJudge:
    return SystemOneJudge(server.url, "jev-1.13.0", "k", **kwargs)


def openai_judge(server, **kwargs) -> OpenAIDecisionsJudge:
    return OpenAIDecisionsJudge(server.url, "gpt-6-luna", "k", **kwargs)


# -- what goes on the wire -----------------------------------------------------------------

def test_the_kind_is_one_choice_over_the_eleven_kinds_with_worth_beside_it(systemone_server):
    with systemone(systemone_server) as judge:
        kinds, worth = judge.kind_and_worth(MESSAGE)
    assert max(kinds, key=kinds.get) == "past_choice" and worth > 0.5
    (request,) = systemone_server.decisions()
    questions = request.body["questions"]
    assert questions["kind"]["type"] == "choice"
    assert questions["kind"]["criteria"] == KIND_DESCRIPTIONS and len(KINDS) == 11
    assert questions["worth"]["type"] == "noul" and questions["worth"]["criteria"]["true"]
    assert request.body["state"] == {"message": MESSAGE}


def test_each_item_is_judged_alone_with_the_message_and_the_last_turns(systemone_server):
    with systemone(systemone_server) as judge:
        judge.set_turns([("user", f"turn {i}") for i in range(6)])
        scores = judge.score(MESSAGE, [NOTE, OTHER])
    assert scores[0] > THRESHOLD > scores[1]
    states = [r.body["state"] for r in systemone_server.item_requests()]
    assert sorted(s["item"] for s in states) == sorted([NOTE, OTHER])
    for state in states:
        assert state["message"] == MESSAGE
        assert [t["text"] for t in state["last_turns"]] == ["turn 2", "turn 3", "turn 4",
                                                              "turn 5"]


def test_sixteen_items_cost_one_round_trip_not_sixteen():
    with SystemOneServer(api_key="k", latency_s=LATENCY_S) as server, \
            systemone(server) as judge:
        begin = time.perf_counter()
        scores = judge.score(MESSAGE, [f"{NOTE} ({i})" for i in range(16)])
        spent = time.perf_counter() - begin
    assert len(scores) == 16 and len(server.item_requests()) == 16
    assert spent < 3 * LATENCY_S, f"{spent:.2f}s: the requests went one after another"


def test_secrets_are_redacted_before_they_leave(systemone_server):
    secret = "sk-" + "a1B2" * 12
    with systemone(systemone_server) as judge:
        judge.score(f"is {secret} the key?", [f"the key is {secret}"])
    assert secret not in json.dumps(systemone_server.decisions()[0].body)


def test_openai_decisions_asks_a_choice_and_predicates_in_order(decisions_server):
    with openai_judge(decisions_server) as judge:
        kinds, worth = judge.kind_and_worth(MESSAGE)
        scores = judge.score(MESSAGE, [NOTE, OTHER])
    assert max(kinds, key=kinds.get) == "past_choice" and 0 <= worth <= 1
    assert scores[0] > scores[1]
    kind_request = decisions_server.decisions()[0].body
    assert [q["type"] for q in kind_request["questions"]] == ["choice", "predicate"]
    choices = kind_request["questions"][0]["choices"]
    assert [c["value"] for c in choices] == list(KINDS)
    assert kind_request["input"][0]["role"] == "developer"
    assert json.loads(kind_request["input"][1]["content"])["message"] == MESSAGE


def test_request_ids_and_tokens_are_counted(systemone_server):
    with systemone(systemone_server) as judge:
        judge.kind_and_worth(MESSAGE)
        judge.score(MESSAGE, [NOTE, OTHER])
    assert judge.usage.requests == 3 and len(set(judge.usage.request_ids)) == 3
    assert all(i.startswith("req_") for i in judge.usage.request_ids)
    assert judge.usage.input_tokens > 3 * 261


# -- faults ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fault,reason,retry_after", [
    (Fault(status=401), "auth", None),
    (Fault(status=403), "auth", None),
    (Fault(status=422, body={"detail": [{"loc": ["body", "state"], "msg": "Field required",
                                         "type": "missing"}]}), "rejected", None),
    (Fault(status=429, headers={"retry-after": "7"}), "rate_limited", 7.0),
    (Fault(status=429, headers={"retry-after-ms": "1500"}), "rate_limited", 1.5),
    (Fault(status=529, headers={"retry-after": "2"}), "overloaded", 2.0),
    (Fault(status=500), "server", None),
    (Fault(status=200, cut=True), "server", None),
])
def test_each_server_fault_is_a_reason(systemone_server, fault, reason, retry_after):
    systemone_server.fail(fault)
    with systemone(systemone_server) as judge, pytest.raises(JudgeError) as raised:
        judge.kind(MESSAGE)
    assert raised.value.reason == reason
    assert raised.value.retry_after_s == retry_after
    if reason == "rejected":
        assert "body.state: Field required" in str(raised.value)


def test_a_hang_is_a_timeout_at_the_deadline(systemone_server):
    systemone_server.fail(Fault(hang=True))
    with systemone(systemone_server) as judge:
        begin = time.perf_counter()
        with pytest.raises(JudgeError) as raised:
            judge.kind(MESSAGE, Deadline(0.3))
    assert raised.value.reason == "timeout"
    assert time.perf_counter() - begin < 1.0


def test_an_unreachable_server_is_refused(systemone_server):
    url = systemone_server.url
    systemone_server.stop()
    with SystemOneJudge(url, "jev-1.13.0", "k") as judge, pytest.raises(JudgeError) as raised:
        judge.kind(MESSAGE)
    assert raised.value.reason == "refused"


def test_an_unknown_model_is_rejected_with_the_servers_words(systemone_server):
    with SystemOneJudge(systemone_server.url, "jev", "k") as judge, \
            pytest.raises(JudgeError) as raised:
        judge.kind(MESSAGE)
    assert raised.value.reason == "rejected" and "Unknown model: jev" in str(raised.value)


def test_a_refused_item_scores_nothing_and_the_others_still_count(decisions_server):
    decisions_server.fail(Fault(refuse=True))
    with openai_judge(decisions_server) as judge:
        scores = judge.score(MESSAGE, [NOTE, NOTE + " again"])
        assert min(scores) == 0.0 and max(scores) > 0.5
        decisions_server.fail(Fault(refuse=True), Fault(refuse=True))
        with pytest.raises(JudgeError) as raised:
            judge.score(MESSAGE, [NOTE, OTHER])
    assert raised.value.reason == "bad_reply"


def test_one_failed_item_scores_zero_and_the_rest_are_judged(systemone_server):
    systemone_server.fail(Fault(status=500))
    with systemone(systemone_server) as judge:
        scores = judge.score(MESSAGE, [NOTE, NOTE + " again"])
    assert min(scores) == 0.0 and max(scores) > THRESHOLD


# -- settings ---------------------------------------------------------------------------------

def test_the_backend_comes_from_judge_backend_or_the_llm_settings(monkeypatch):
    assert judge_backend(load_settings()) == "local"
    monkeypatch.setenv("MEMSIFT_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    assert judge_backend(load_settings()) == "chat"  # [llm] settings keep meaning chat
    monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
    assert judge_backend(load_settings()) == "systemone"
    monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "sytemone")
    settings = load_settings()
    assert judge_backend(settings) == "local"
    assert any("unknown judge.backend" in w for w in settings.warnings)


def test_each_base_url_follows_its_clients_convention(monkeypatch):
    with SystemOneServer() as one, OpenAIDecisionsServer() as other:
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", one.url)  # no version
        with get_judge(load_settings()) as judge:
            judge.kind(MESSAGE)
            assert judge.model == "jev-1.13.0"
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "openai-decisions")
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", other.url)  # ends in /v1
        with get_judge(load_settings()) as judge:
            judge.kind(MESSAGE)
            assert judge.model == "gpt-6-luna"
        assert [r.path for r in one.decisions()] == ["/v1/systemone"]
        assert [r.path for r in other.decisions()] == ["/v1/decisions"]
    assert default_model("https://openrouter.ai/api") == "typesafe/jev-1.13"


@pytest.mark.parametrize("backend,env,wanted", [
    ("systemone", {"TYPESAFE_API_KEY": "ts-key"}, "ts-key"),
    ("systemone", {"OPENROUTER_API_KEY": "or-key"}, "or-key"),
    ("openai-decisions", {"OPENAI_API_KEY": "oa-key"}, "oa-key"),
    ("systemone", {"TYPESAFE_API_KEY": "ts-key", "MEMSIFT_JUDGE_API_KEY": "own"}, "own"),
])
def test_the_key_is_memsifts_own_else_the_providers(monkeypatch, backend, env, wanted):
    server_class = SystemOneServer if backend == "systemone" else OpenAIDecisionsServer
    with server_class(api_key=wanted) as server:
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", backend)
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", server.url)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        with get_judge(load_settings()) as judge:
            judge.kind(MESSAGE)  # a wrong key would be a 401: JudgeError
        assert server.decisions()[0].headers["authorization"] == f"Bearer {wanted}"


def test_thresholds_are_the_backends_own_unless_configured(monkeypatch):
    monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
    assert get_judge(load_settings()).threshold == THRESHOLD
    monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "openai-decisions")
    assert get_judge(load_settings()).threshold == 0.5
    monkeypatch.setenv("MEMSIFT_JUDGE_THRESHOLD", "0.9")
    assert get_judge(load_settings()).threshold == 0.9


# -- the prompt path stays light -------------------------------------------------------------

HEAVY = ("openai", "typesafe_sdk", "pydantic", "httpx2", "numpy")
RUNS = 5  # fresh processes per module; the fastest is the import's cost, less the noise


def _fresh_import_s(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; " \
           "print(time.perf_counter() - t)"
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(RUNS)]
    return min(times)


def test_the_backend_modules_import_no_sdk_and_cost_about_what_httpx_costs():
    code = ("import sys, memsift.judge.systemone, memsift.judge.openai_decisions; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "[]"
    httpx_s = _fresh_import_s("httpx")
    ours_s = _fresh_import_s("memsift.judge.systemone")
    # ours is httpx without its command-line tool, plus a few small modules of memsift
    assert ours_s <= httpx_s * 1.3 + 0.03, f"{ours_s:.3f}s against httpx's {httpx_s:.3f}s"


def test_memsift_judge_asks_the_configured_typed_backend(systemone_server, monkeypatch):
    from click.testing import CliRunner

    from memsift.cli import cli

    monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
    monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", systemone_server.url)
    monkeypatch.setenv("MEMSIFT_JUDGE_API_KEY", "k")
    result = CliRunner().invoke(cli, ["judge", MESSAGE, "--item", NOTE, "--item", OTHER,
                                      "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["backend"] == "systemone" and report["threshold"] == THRESHOLD
    assert [i["passes"] for i in report["items"]] == [True, False]
    assert len(systemone_server.decisions()) == 3
