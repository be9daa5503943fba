"""`memsift judge` through the front door, on the OpenAI-compatible backend and a fake server."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakes.openai_server import FAKE_MODEL, error_reply, probs_reply

from memsift.cli import cli


def answer(body):
    """Kind questions: mostly `decision` (F). Item questions: yes when the passage says sqlite."""
    prompt = body["messages"][-1]["content"]
    if "<passage>" in prompt:
        passage = prompt.split("<passage>")[1]
        return probs_reply({"yes": 0.85, "no": 0.15} if "sqlite" in passage
                           else {"yes": 0.1, "no": 0.9})
    return probs_reply({"F": 0.8, "C": 0.15, "A": 0.05})


@pytest.fixture
def endpoint(openai_server, monkeypatch):
    monkeypatch.setenv("MEMSIFT_LLM_BASE_URL", openai_server.url)
    monkeypatch.setenv("MEMSIFT_LLM_MODEL", FAKE_MODEL)
    monkeypatch.setenv("MEMSIFT_LLM_API_KEY", "sk-test")
    openai_server.on_chat = answer
    return openai_server


def run(*args: str):
    return CliRunner().invoke(cli, ["judge", *args], catch_exceptions=False)


def test_judge_prints_kinds_sorted_with_search_mass(endpoint):
    result = run("which database should the cache use?")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("decision") < out.index("instruction") < out.index("reaction")
    assert "0.800" in out
    assert "search 0.800" in out and "no search 0.200" in out
    assert len(endpoint.chat_requests()) == 1


def test_judge_scores_each_item_against_the_threshold(endpoint):
    result = run("which database?", "--item", "we chose sqlite", "--item", "the logo is blue",
                 "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["backend"] == "openai"
    assert next(iter(report["kinds"])) == "decision"
    assert report["search"] + report["no_search"] == pytest.approx(1.0)
    assert [(i["text"], i["passes"]) for i in report["items"]] == [
        ("we chose sqlite", True), ("the logo is blue", False)]
    assert report["items"][0]["score"] == pytest.approx(0.85, abs=0.01)
    assert len(endpoint.chat_requests()) == 3  # the kind, then one question per item


def test_judge_table_shows_item_scores_and_user_markup_literally(endpoint):
    result = run("which database?", "--item", "[bold]sqlite[/bold] it is")
    assert result.exit_code == 0, result.output
    assert "[bold]sqlite[/bold] it is" in result.output
    assert "0.850" in result.output and "yes" in result.output


def test_judge_reports_a_model_failure_as_a_clean_error(endpoint):
    endpoint.script(error_reply(401))
    result = run("hello")
    assert result.exit_code == 1
    assert "auth" in result.output
    assert "Traceback" not in result.output


def test_judge_without_a_model_name_says_what_to_set(openai_server, monkeypatch):
    monkeypatch.setenv("MEMSIFT_LLM_BASE_URL", openai_server.url)
    result = run("hello")
    assert result.exit_code == 1
    assert "llm.model" in result.output
    assert openai_server.requests == []


def test_judge_uses_the_local_backend_when_no_endpoint_is_set():
    result = run("thanks, looks good", "--item", "the cache is on sqlite", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["backend"] == "local"
    assert sum(report["kinds"].values()) == pytest.approx(1.0)
    assert 0.0 < report["threshold"] < 1.0
    assert 0.0 <= report["items"][0]["score"] <= 1.0
