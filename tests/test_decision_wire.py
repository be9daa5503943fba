"""Wire compatibility of the typed decision APIs: the official clients (typesafe-sdk, openai)
call the stand-in servers over real HTTP, so the stand-ins accept what the clients send and
return what they parse; memsift's own requests pass the same validation and the official
request schema; bad requests get the APIs' own errors."""

from __future__ import annotations

import httpx
import openai
import pytest
import typesafe_sdk as ts
from typesafe_sdk._schemas.models import SystemOneRequest, SystemOneResponse

from memsift.bench.decision_server import Fault
from memsift.judge.openai_decisions import OpenAIDecisionsJudge
from memsift.judge.systemone import SystemOneJudge

NO_RETRY = ts.RetryPolicy(max_retries=0)
MESSAGE = "Which port does the staging database listen on?"
NOTE = "The staging database listens on port 6543, not the default 5432."


def sdk(server, key: str = "k") -> ts.TypeSafeClient:
    return ts.TypeSafeClient(api_key=key, base_url=server.url, retry=NO_RETRY,
                             compression=False, timeout=5.0)


def openai_client(server, key: str = "k") -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=server.url, max_retries=0, timeout=5.0)


# -- System One and the typesafe-sdk client ----------------------------------------------

def test_the_sdk_asks_every_question_type_and_parses_the_answers(systemone_server):
    with sdk(systemone_server) as client:
        reply = client.system_one(
            state={"message": MESSAGE}, model="jev-latest",
            questions={"yes": ts.Noul(instructions="Is this about a database?"),
                       "kind": ts.Choice(criteria={"question": "asks", "order": None}),
                       "level": ts.Score(criteria=["none", "some", "all"])})
    assert reply.model == "jev-1.13.0"
    assert 0.0 <= reply.answers["yes"].noul <= 1.0
    assert set(reply.answers["kind"].probabilities) == {"question", "order"}
    assert len(reply.answers["level"].probabilities) == 3
    assert reply.usage.input_tokens > 0
    sent = systemone_server.decisions()[-1]
    assert sent.path == "/v1/systemone" and sent.headers["authorization"] == "Bearer k"


def test_the_sdk_gets_the_documented_errors(systemone_server):
    with sdk(systemone_server, key="wrong") as client, \
            pytest.raises(ts.TypeSafeAuthenticationError):
        client.system_one(state="x", questions={"q": ts.Noul(instructions="?")})
    too_many = ts.Choice(criteria={f"o{i}": None for i in range(256)})
    with sdk(systemone_server) as client, \
            pytest.raises(ts.TypeSafeUnprocessableEntityError) as rejected:
        client.system_one(state="x", questions={"q": too_many})
    assert "255" in str(rejected.value.body) or "255" in str(rejected.value)
    systemone_server.fail(Fault(status=429, headers={"retry-after": "7"}))
    with sdk(systemone_server) as client, pytest.raises(ts.TypeSafeRateLimitError):
        client.system_one(state="x", questions={"q": ts.Noul(instructions="?")})


@pytest.mark.parametrize("question,ok", [
    ({"type": "choice", "criteria": {f"o{i}": None for i in range(255)}}, True),
    ({"type": "choice", "criteria": {f"o{i}": None for i in range(256)}}, False),
    ({"type": "choice", "criteria": {}}, False),
    ({"type": "score", "criteria": [str(i) for i in range(10)]}, True),
    ({"type": "score", "criteria": [str(i) for i in range(11)]}, False),
    ({"type": "score", "criteria": ["only"]}, True),
    ({"type": "noul"}, False),
    ({"type": "noul", "criteria": {"true": "yes it is"}}, True),
    ({"type": "noul", "instructions": "?", "extra": 1}, False),
    ({"type": "yesno", "instructions": "?"}, False),
    ({"type": "box", "instructions": "the cat"}, False),
])
def test_the_stand_in_validates_questions_as_system_one_does(systemone_server, question, ok):
    body = {"model": "jev-latest", "state": {"message": "x"}, "questions": {"q": question}}
    reply = httpx.post(systemone_server.url + "/v1/systemone", json=body,
                       headers={"Authorization": "Bearer k"})
    assert reply.status_code == (200 if ok else 422), reply.text
    if not ok:
        detail = reply.json()["detail"]
        assert detail[0]["loc"][:3] == ["body", "questions", "q"] and detail[0]["msg"]


@pytest.mark.parametrize("body,status", [
    ({"model": "jev-latest", "state": 3, "questions": {"q": {"type": "noul",
                                                               "instructions": "?"}}}, 422),
    ({"model": "jev-latest", "state": "x", "questions": {}}, 422),
    ({"model": "jev-latest", "questions": {"q": {"type": "noul", "instructions": "?"}}}, 422),
    ({"model": "jev", "state": "x", "questions": {"q": {"type": "noul", "instructions": "?"}}},
     400),
    ({"model": "jev-latest", "state": "x" * 140_000,
      "questions": {"q": {"type": "noul", "instructions": "?"}}}, 422),
])
def test_the_stand_in_rejects_bad_requests_with_their_detail(systemone_server, body, status):
    reply = httpx.post(systemone_server.url + "/v1/systemone", json=body,
                       headers={"Authorization": "Bearer k"})
    assert reply.status_code == status
    assert reply.json()["detail"]
    assert reply.headers["x-typesafe-request-id"].startswith("req_")


def test_memsifts_requests_pass_the_official_schema_and_its_replies_parse(systemone_server):
    with SystemOneJudge(systemone_server.url, "jev-1.13.0", "k") as judge:
        judge.set_turns([("user", "we set up staging"), ("assistant", "done")])
        judge.kind_and_worth(MESSAGE)
        judge.score(MESSAGE, [NOTE, "Write release notes on Fridays."])
        judge.worth_keeping("We chose Postgres for the ledger because of transactions.")
        judge.choose("Is it?", ["yes", "no"], "text")
    seen = systemone_server.decisions()
    assert len(seen) == 5 and all(s.status == 200 for s in seen)
    for request in seen:
        SystemOneRequest.model_validate(request.body)  # the SDK's schema, from the API's own
    reply = httpx.post(systemone_server.url + "/v1/systemone", json=seen[0].body,
                       headers={"Authorization": "Bearer k"}).json()
    SystemOneResponse.model_validate(reply)


# -- OpenAI Decisions and the openai client ----------------------------------------------

def test_the_openai_client_asks_every_question_type_and_parses_the_answers(decisions_server):
    client = openai_client(decisions_server)
    assert hasattr(client, "decisions")
    decision = client.decisions.create(
        model="gpt-6-luna", input=[{"role": "user", "content": MESSAGE}],
        questions=[{"type": "predicate", "name": "db", "instructions": "About a database?"},
                   {"type": "choice", "instructions": "Which?",
                    "choices": [{"value": "a", "description": "first"}, {"value": True}]},
                   {"type": "score", "instructions": "How much?",
                    "levels": [{"label": "none"}, {"label": "all"}]}])
    assert [a.type for a in decision.answers] == ["predicate", "choice", "score"]
    assert decision.answers[0].name == "db" and 0 <= decision.answers[0].probability <= 1
    assert {p.value for p in decision.answers[1].probabilities} == {"a", True}
    assert decision.usage.input_tokens > 0
    assert decisions_server.decisions()[-1].path == "/v1/decisions"


def test_the_openai_client_gets_refusals_and_errors(decisions_server):
    client = openai_client(decisions_server)
    decisions_server.fail(Fault(refuse=True))
    decision = client.decisions.create(
        model="gpt-6-luna", input="x",
        questions=[{"type": "predicate", "instructions": "?"},
                   {"type": "predicate", "name": "last", "instructions": "?"}])
    assert decision.answers[0].type == "predicate"
    assert decision.answers[1].type == "refusal" and decision.answers[1].name == "last"
    with pytest.raises(openai.BadRequestError):
        client.decisions.create(model="gpt-6-luna", input="x", questions=[
            {"type": "choice", "instructions": "?", "choices": [{"value": "only"}]}])
    with pytest.raises(openai.BadRequestError):
        client.decisions.create(model="gpt-6-luna", input="x",
                                questions=[{"type": "predicate", "instructions": "?"}] * 401)
    with pytest.raises(openai.AuthenticationError):
        openai_client(decisions_server, "wrong").decisions.create(
            model="gpt-6-luna", input="x", questions=[{"type": "predicate", "instructions": "?"}])


def test_memsifts_openai_requests_are_what_the_client_sends(decisions_server):
    with OpenAIDecisionsJudge(decisions_server.url, "gpt-6-luna", "k") as judge:
        judge.kind_and_worth(MESSAGE)
        judge.score(MESSAGE, [NOTE])
    ours = decisions_server.decisions()
    assert len(ours) == 2 and all(s.status == 200 for s in ours)
    client = openai_client(decisions_server)
    for request in ours:  # the same bodies, sent by the official client, are answered alike
        decision = client.decisions.create(**request.body)
        assert len(decision.answers) == len(request.body["questions"])
    theirs = decisions_server.decisions()[2:]
    assert [t.body for t in theirs] == [o.body for o in ours]
