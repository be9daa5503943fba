"""Both host adapters on payloads and transcripts recorded from the real CLIs
(tests/fixtures/hosts, made by tests/e2e/record_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsift.events import HookResult
from memsift.hosts import adapter_for, claude_code, codex

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
HOSTS = ("claude-code", "codex")
EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd")
CONVERSATION = [
    ("user", "Which port does the staging database use?"),
    ("assistant", "The staging database listens on port 5433."),
    ("user", "And the production one?"),
    ("assistant", "Production uses 5432."),
]


def _payload(host: str, name: str) -> bytes:
    return (FIXTURES / host / name).read_bytes()


def _log_lines(home: Path) -> list[str]:
    log = home / "logs" / "memsift.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("event_name", EVENTS)
def test_recorded_payload_becomes_an_event(host, event_name):
    raw = _payload(host, f"{event_name}-1.json")
    event = adapter_for(host).parse_event(raw, event_name)
    recorded = json.loads(raw)
    assert event is not None
    assert (event.host, event.name) == (host, event_name)
    assert event.session_id == recorded["session_id"]
    assert event.cwd == recorded["cwd"]
    assert event.transcript_path == recorded["transcript_path"]
    expected_prompt = recorded["prompt"] if event_name == "UserPromptSubmit" else ""
    assert event.prompt == expected_prompt


def test_codex_event_keeps_the_turn_id():
    raw = _payload("codex", "UserPromptSubmit-2.json")
    event = codex.parse_event(raw, "UserPromptSubmit")
    assert event.turn_id == json.loads(raw)["turn_id"]
    assert event.prompt == "And the production one?"


@pytest.mark.parametrize("host", HOSTS)
def test_transcript_keeps_only_what_the_user_and_assistant_said(host):
    turns = adapter_for(host).read_transcript(str(FIXTURES / host / "transcript.jsonl"))
    assert [(t.role, t.text) for t in turns] == CONVERSATION
    assert [t.index for t in turns] == [0, 1, 2, 3]
    assert all(t.timestamp for t in turns)


@pytest.mark.parametrize("host", HOSTS)
def test_transcript_skips_hook_context_tool_calls_and_environment(host):
    text = " ".join(t.text for t in adapter_for(host).read_transcript(
        str(FIXTURES / host / "transcript.jsonl")))
    assert "ops/staging.env" not in text  # the hook's added context
    assert "echo 5433" not in text  # the tool call
    assert "environment_context" not in text and "system-reminder" not in text
    assert "No response requested" not in text  # Claude Code's synthetic reply on resume


@pytest.mark.parametrize("host", HOSTS)
def test_truncated_transcript_gives_the_complete_lines(host, tmp_path, isolated_env):
    data = (FIXTURES / host / "transcript.jsonl").read_bytes()
    last_turn = data.index(b"Production uses 5432.")
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[:last_turn + 5])  # the host was still writing that line
    turns = adapter_for(host).read_transcript(str(cut))
    assert [(t.role, t.text) for t in turns] == CONVERSATION[:3]
    assert any("transcript lines skipped" in line for line in _log_lines(isolated_env))


@pytest.mark.parametrize("host", HOSTS)
def test_missing_transcript_gives_no_turns_and_one_log_line(host, tmp_path, isolated_env):
    assert adapter_for(host).read_transcript(str(tmp_path / "gone.jsonl")) == []
    lines = _log_lines(isolated_env)
    assert len(lines) == 1 and "transcript cannot be read" in lines[0]


def test_transcript_with_invalid_utf8_still_reads(tmp_path):
    line = {"type": "user", "message": {"role": "user", "content": "caf\xe9 port?"}}
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(line, ensure_ascii=False).encode("latin-1") + b"\n")
    turns = claude_code.read_transcript(str(path))
    assert len(turns) == 1 and turns[0].text.startswith("caf")


BAD_INPUTS = {
    "malformed JSON": (b'{"session_id": "s", "prompt": ', "not valid JSON"),
    "invalid UTF-8": (b'{"session_id": "s\xff\xfe", "cwd": "/", "prompt": "x"}', "not valid UTF-8"),
    "not an object": (b'["session_id", "cwd"]', "not a JSON object"),
    "missing fields": (b'{"prompt": "hello"}', "lacks fields"),
    "empty input": (b"", "not valid JSON"),
}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_hook_input_gives_no_event_and_one_log_line(host, case, isolated_env):
    raw, reason = BAD_INPUTS[case]
    assert adapter_for(host).parse_event(raw, "UserPromptSubmit") is None
    lines = _log_lines(isolated_env)
    assert len(lines) == 1 and reason in lines[0]


@pytest.mark.parametrize("host", HOSTS)
def test_five_megabyte_prompt_is_ignored_with_one_log_line(host, isolated_env):
    payload = json.loads(_payload(host, "UserPromptSubmit-1.json"))
    payload["prompt"] = "x" * (5 * 1024 * 1024)
    event = adapter_for(host).parse_event(json.dumps(payload).encode(), "UserPromptSubmit")
    assert event is None
    lines = _log_lines(isolated_env)
    assert len(lines) == 1 and "prompt too long" in lines[0]


@pytest.mark.parametrize("host", HOSTS)
def test_result_with_context_renders_as_additional_context(host):
    out = adapter_for(host).render_result(HookResult(context="Port 5433 (ops/staging.env)"))
    assert json.loads(out) == {"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit", "additionalContext": "Port 5433 (ops/staging.env)"}}


@pytest.mark.parametrize("host", HOSTS)
def test_empty_result_renders_nothing(host):
    assert adapter_for(host).render_result(HookResult()) == ""
    assert adapter_for(host).render_result(HookResult(context="  \n")) == ""
