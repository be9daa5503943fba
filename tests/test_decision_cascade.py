"""The cascade and the session end on a typed decision API (the System One stand-in on
127.0.0.1): one request per item judged, the request ids in the audit line, tokens and cost
per day in `memsift status`, and the keep decision through the same backend."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memsift.audit import read_audit
from memsift.bench.decision_server import default_decide
from memsift.bench.systemone_server import SystemOneServer
from memsift.cli import cli
from memsift.config import load_settings
from memsift.events import Event
from memsift.memory.importer import import_data
from memsift.prompt.cascade import run_prompt
from memsift.session_end.distill import process_session
from memsift.session_end.keepers import DecisionKeeper, make_keeper

PROMPT = "Which port does the staging database listen on?"
NOTES = [{"id": "n1", "text": "The staging database listens on port 6543, not 5432."},
         {"id": "n2", "text": "Release notes are written on Fridays by the on-call person."},
         {"id": "n3", "text": "The frontend builds with Vite; keep the legacy webpack file."}]
PASSAGES = [{"id": "m1", "text": "Billing invoices are rendered as PDF by the worker."},
            {"id": "m2", "text": "The office moved to the fourth floor in June."}]
JEV_PRICE = 0.042  # USD per million input tokens, the price memsift states for jev-1.13


@pytest.fixture
def server(monkeypatch):
    with SystemOneServer(api_key="k") as fake:
        monkeypatch.setenv("MEMSIFT_JUDGE_BACKEND", "systemone")
        monkeypatch.setenv("MEMSIFT_JUDGE_BASE_URL", fake.url)
        monkeypatch.setenv("MEMSIFT_JUDGE_API_KEY", "k")
        monkeypatch.setenv("MEMSIFT_HEALTH_PROBE_EVERY_S", "3600")
        yield fake


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "riverbed"
    (root / ".git").mkdir(parents=True)
    import_data({"notes": NOTES, "memory": PASSAGES}, load_settings({"cognee.url": ""}), root)
    return root


def ask(project, prompt: str = PROMPT, session: str = "s1") -> str:
    event = Event(host="claude-code", name="UserPromptSubmit", session_id=session,
                  cwd=str(project), prompt=prompt)
    return run_prompt(event, load_settings()).context


def test_each_note_and_passage_is_one_request_and_the_answer_is_added(server, project):
    added = ask(project)
    assert "6543" in added and "Fridays" not in added
    items = [r.body["state"]["item"] for r in server.item_requests()]
    every = [x["text"] for x in NOTES + PASSAGES]
    assert sorted(items) == sorted(every)  # each judged once, each alone
    kind = [r for r in server.decisions() if "item" not in r.body["state"]]
    assert len(kind) == 1 and set(kind[0].body["questions"]) == {"kind", "worth"}


def test_an_unrelated_prompt_gets_nothing(server, project):
    assert ask(project, "Write a haiku about autumn leaves.") == ""
    assert read_audit(1)[0]["kind"] == "instruction"


def test_the_audit_line_names_the_requests_and_status_counts_tokens_and_cost(server, project):
    ask(project)
    line = read_audit(1)[0]["judge"]
    served = [r for r in server.decisions()]
    assert line["backend"] == "systemone" and line["model"] == "jev-1.13.0"
    assert line["requests"] == len(served)  # billed when sent, answered or not
    assert 1 <= len(line["request_ids"]) <= line["requests"]
    assert all(i.startswith("req_") for i in line["request_ids"])
    shown = json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)
    (usage,) = shown["judge_usage"]
    assert usage["model"] == "systemone jev-1.13.0" and usage["requests"] == line["requests"]
    assert usage["input_tokens"] == line["input_tokens"] > 0
    assert usage["cost_usd"] == pytest.approx(usage["input_tokens"] * JEV_PRICE / 1e6)
    assert shown["services"]["decisions"]["backend"] == f"systemone {server.url} (jev-1.13.0)"
    text = CliRunner().invoke(cli, ["status"], env={"COLUMNS": "160"}).stdout
    assert "Remote decision model usage" in text and "systemone jev-1.13.0" in text
    logged = CliRunner().invoke(cli, ["log"], env={"COLUMNS": "200"}).stdout
    assert line["request_ids"][0] in logged


def test_the_price_can_be_configured(server, project, monkeypatch):
    monkeypatch.setenv("MEMSIFT_JUDGE_PRICE_PER_MTOK", "1.0")
    ask(project)
    shown = json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)
    (usage,) = shown["judge_usage"]
    assert usage["cost_usd"] == pytest.approx(usage["input_tokens"] / 1e6)


def _transcript(path, exchanges) -> None:
    lines = []
    for user, reply in exchanges:
        lines.append({"type": "user", "message": {"role": "user", "content": user}})
        lines.append({"type": "assistant", "message": {
            "role": "assistant", "content": [{"type": "text", "text": reply}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_the_keep_decision_goes_through_the_same_backend(server, tmp_path):
    def decide(kind, instructions, options, state):
        if isinstance(state, dict) and "text" in state:
            p = 0.9 if "Postgres" in state["text"] else 0.1
            return [p, 1 - p]
        return default_decide(kind, instructions, options, state)

    server.decide = decide
    assert isinstance(make_keeper(load_settings()), DecisionKeeper)
    transcript = tmp_path / "t.jsonl"
    _transcript(transcript, [
        ("Should the importer keep SQLite or move to Postgres?",
         ("Move to Postgres: SQLite serialises writers and the four workers hit 'database is "
          "locked' every night.")),
        ("thanks, that works", "Glad it helped!")])
    job = {"host": "claude-code", "session_id": "s9", "transcript_path": str(transcript),
           "cwd": str(tmp_path), "event": "Stop"}
    outcome = process_session(job, load_settings())
    assert outcome["kept"] == 1 and outcome["exchanges"] == 2
    asked = [r.body["state"]["text"] for r in server.decisions()]
    assert len(asked) == 2 and "Postgres" in asked[0]
    shown = json.loads(CliRunner().invoke(cli, ["status", "--json"]).stdout)
    assert shown["judge_usage"][0]["requests"] == 2


def test_the_state_holds_the_last_turns_read_from_the_end_of_a_long_transcript(server,
                                                                                project,
                                                                                tmp_path):
    from memsift.hosts import adapter_for

    transcript = tmp_path / "long.jsonl"
    tool_output = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "content": "x" * 3_000_000}]}}
    turns = [("user", f"question {i}") if i % 2 == 0 else ("assistant", f"answer {i}")
             for i in range(6)] + [("user", PROMPT)]
    lines = [tool_output] + [
        {"type": role, "message": {"role": role, "content": text if role == "user" else
                                   [{"type": "text", "text": text}]}} for role, text in turns]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tail = adapter_for("claude-code").read_transcript(str(transcript), tail_bytes=4096)
    assert [t.text for t in tail] == [text for _, text in turns]  # the cut line is dropped
    event = Event(host="claude-code", name="UserPromptSubmit", session_id="s1",
                  cwd=str(project), prompt=PROMPT, transcript_path=str(transcript))
    run_prompt(event, load_settings())
    state = server.item_requests()[0].body["state"]
    assert [t["text"] for t in state["last_turns"]] == ["question 2", "answer 3",
                                                         "question 4", "answer 5"]


def test_a_long_prompt_is_not_its_own_turn_before_and_an_earlier_paste_is_read_focused(
        server, project, tmp_path):
    from memsift.bench.scale import long_prompt

    earlier, prompt = long_prompt("why does the build fail?"), long_prompt(PROMPT)
    transcript = tmp_path / "pasted.jsonl"
    turns = [("user", earlier), ("assistant", "the cache key changed"), ("user", prompt)]
    transcript.write_text("".join(json.dumps({"type": role, "message": {
        "role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}})
        + "\n" for role, text in turns))
    event = Event(host="claude-code", name="UserPromptSubmit", session_id="s1",
                  cwd=str(project), prompt=prompt, transcript_path=str(transcript))
    run_prompt(event, load_settings())
    state = server.item_requests()[0].body["state"]
    last = [t["text"] for t in state["last_turns"]]
    assert len(last) == 2 and last[1] == "the cache key changed"  # the prompt is not a turn
    assert last[0].startswith("why does the build fail?") and len(last[0]) < 2_000
