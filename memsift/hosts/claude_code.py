"""Claude Code: its hook stdin, its transcript (~/.claude/projects/<cwd>/<session>.jsonl) and
its hook output.

A transcript line is one JSON object with a `type`. Only `user` and `assistant` lines carry
the conversation; attachments (hook context, environment), system lines, queue operations and
request logs are skipped, as are tool calls, tool results and messages Claude Code makes up
itself (`isMeta`, the `<synthetic>` model, subagent side chains).
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

HOST = "claude-code"
# User text Claude Code writes itself: slash-command echoes and reminders, not the user's words.
_GENERATED_PREFIXES = ("<command-", "<local-command-", "<system-reminder>", "Caveat: The messages")


def parse_event(raw: bytes, event_name: str) -> Event | None:
    payload = load_payload(raw, HOST, event_name)
    return None if payload is None else build_event(payload, HOST, event_name)


def _turn_text(line: dict) -> tuple[str, str] | None:
    kind = line.get("type")
    if kind not in ("user", "assistant") or line.get("isMeta") or line.get("isSidechain"):
        return None
    message = line.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    parts = text_parts(message.get("content"), ("text",))
    if kind == "user":
        parts = [p for p in parts if not p.lstrip().startswith(_GENERATED_PREFIXES)]
    text = "\n".join(p for p in parts if p.strip())
    return (kind, text) if text else None


def read_transcript(path: str, tail_bytes: int | None = None) -> list[Turn]:
    return read_turns(path, HOST, _turn_text, tail_bytes)


def render_result(result: HookResult) -> str:
    return render_additional_context(result)
