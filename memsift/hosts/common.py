"""What both host adapters share: reading the hook's stdin JSON defensively, reading JSONL
transcripts that may be cut short, and rendering the additional context.

Every failure here is the host's input being odd, never a reason to break the session: the
functions log one line saying why and return None or what could be read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memsift.events import Event, HookResult, Turn
from memsift.log import log

# A long prompt is judged on the question around its paste (memsift.prompt.focus), so pasted
# logs and files still get memory; one this long is a dump, and reading the transcript that
# holds it would cost the prompt budget before any judging.
MAX_PROMPT_CHARS = 1_000_000


def load_payload(raw: bytes, host: str, event_name: str) -> dict[str, Any] | None:
    """The hook's stdin as a JSON object, or None (logged) when it is not one."""
    context = {"host": host, "event": event_name, "bytes": len(raw)}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        log("warning", "hook input is not valid UTF-8, nothing added", **context,
            error=str(exc))
        return None
    try:
        payload = json.loads(text)
    except ValueError as exc:
        log("warning", "hook input is not valid JSON, nothing added", **context, error=str(exc))
        return None
    if not isinstance(payload, dict):
        log("warning", "hook input is not a JSON object, nothing added", **context,
            kind=type(payload).__name__)
        return None
    return payload


def _missing_fields(payload: dict[str, Any], required: tuple[str, ...]) -> list[str]:
    return [key for key in required if not isinstance(payload.get(key), str)
            or (key == "session_id" and not payload[key])]


def build_event(payload: dict[str, Any], host: str, event_name: str) -> Event | None:
    """One Event from a host payload whose fields both hosts name alike; None (logged) when a
    field the event needs is missing or the prompt is too long to be a question."""
    required = ("session_id", "cwd") + (("prompt",) if event_name == "UserPromptSubmit" else ())
    missing = _missing_fields(payload, required)
    if missing:
        log("warning", "hook input lacks fields, nothing added", host=host, event=event_name,
            missing=missing)
        return None
    prompt = payload.get("prompt") if event_name == "UserPromptSubmit" else ""
    if len(prompt) > MAX_PROMPT_CHARS:
        log("info", "prompt too long to be a question, nothing added", host=host,
            chars=len(prompt))
        return None
    declared = payload.get("hook_event_name")
    if declared and declared != event_name:
        log("warning", "hook event differs from the command's, using the command's",
            host=host, declared=declared, event=event_name)
    return Event(
        host=host, name=event_name, session_id=payload["session_id"], cwd=payload["cwd"],
        prompt=prompt,
        transcript_path=_text(payload.get("transcript_path")),
        turn_id=_text(payload.get("turn_id")),
        raw=payload,
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def read_jsonl(path: str | Path, host: str,
               tail_bytes: int | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of a transcript, one a line; with `tail_bytes`, of its last bytes
    only (the line cut at that start is dropped). A missing file yields nothing; a line that
    is cut short (the host still writing) or not an object is skipped; both logged."""
    try:
        data = _read(Path(path), tail_bytes)
    except OSError as exc:
        log("warning", "transcript cannot be read, no turns", host=host, path=str(path),
            error=f"{type(exc).__name__}: {exc.strerror or exc}")
        return
    bad = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line.decode("utf-8", errors="replace"))
        except ValueError:
            bad += 1
            continue
        if isinstance(item, dict):
            yield item
        else:
            bad += 1
    if bad:
        log("info", "transcript lines skipped (cut short or not JSON objects)", host=host,
            path=str(path), lines=bad)


def _read(path: Path, tail_bytes: int | None) -> bytes:
    if tail_bytes is None:
        return path.read_bytes()
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size <= tail_bytes:
            handle.seek(0)
            return handle.read()
        handle.seek(size - tail_bytes)
        return handle.read().split(b"\n", 1)[-1]


def text_parts(content: object, kinds: tuple[str, ...]) -> list[str]:
    """The text of a message's content: a plain string, or the parts of the given kinds."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [part["text"] for part in content
            if isinstance(part, dict) and part.get("type") in kinds
            and isinstance(part.get("text"), str)]


def render_additional_context(result: HookResult) -> str:
    """The stdout both hosts read as added context; "" adds nothing."""
    if not result.context.strip():
        return ""
    return json.dumps({"hookSpecificOutput": {
        "hookEventName": result.event_name,
        "additionalContext": result.context,
    }}, ensure_ascii=False)


def read_turns(path: str | Path, host: str,
               turn_text: Callable[[dict[str, Any]], tuple[str, str] | None],
               tail_bytes: int | None = None) -> list[Turn]:
    """A transcript's user and assistant turns, in order: `turn_text` is the host's reading of
    one line, None for lines that are not conversation (tools, hook output, context). With
    `tail_bytes`, the turns of the file's end only."""
    turns: list[Turn] = []
    for line in read_jsonl(path, host, tail_bytes):
        kept = turn_text(line)
        if kept:
            role, text = kept
            turns.append(Turn(role=role, text=text, index=len(turns),  # type: ignore[arg-type]
                              timestamp=str(line.get("timestamp", ""))))
    return turns
