"""Codex: its hook stdin, its rollout transcript ($CODEX_HOME/sessions/.../rollout-*.jsonl)
and its hook output.

A rollout line is `{"timestamp", "type", "payload"}`. The conversation is in `response_item`
lines whose payload is a `message` from the user or the assistant; developer messages (hook
context, instructions), function calls and their output, reasoning and event lines are
skipped, as is the user-role context Codex writes itself (`<environment_context>`, AGENTS.md).
"""

from __future__ import annotations

from memsift.events import Event, HookResult, Turn
from memsift.hosts.common import (
    build_event,
    load_payload,
    read_turns,
    render_additional_context,
    text_parts,
)

HOST = "codex"
_GENERATED_PREFIXES = (
    "<environment_context>", "<user_instructions>", "<user_shell_command>", "<turn_aborted>",
    "# AGENTS.md instructions",
)


def parse_event(raw: bytes, event_name: str) -> Event | None:
    payload = load_payload(raw, HOST, event_name)
    return None if payload is None else build_event(payload, HOST, event_name)


def _turn_text(line: dict) -> tuple[str, str] | None:
    payload = line.get("payload")
    if line.get("type") != "response_item" or not isinstance(payload, dict):
        return None
    role = payload.get("role")
    if payload.get("type") != "message" or role not in ("user", "assistant"):
        return None
    parts = text_parts(payload.get("content"), ("input_text", "output_text"))
    if role == "user":
        parts = [p for p in parts if not p.lstrip().startswith(_GENERATED_PREFIXES)]
    text = "\n".join(p for p in parts if p.strip())
    return (role, text) if text else None


def read_transcript(path: str, tail_bytes: int | None = None) -> list[Turn]:
    return read_turns(path, HOST, _turn_text, tail_bytes)


def render_result(result: HookResult) -> str:
    return render_additional_context(result)
