"""The host-neutral types: what a hook receives and what it returns.

Host adapters (memsift.hosts) turn each host's stdin JSON and transcript into these; nothing
else in memsift knows which host it runs in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Host = Literal["claude-code", "codex"]
EventName = Literal["UserPromptSubmit", "Stop", "SessionEnd"]


@dataclass(frozen=True)
class Event:
    host: str
    name: str
    session_id: str
    cwd: str
    prompt: str = ""
    transcript_path: str = ""
    turn_id: str = ""
    raw: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Turn:
    role: Literal["user", "assistant"]
    text: str
    index: int = 0  # position among the kept turns, for "source: session, turn"
    timestamp: str = ""


@dataclass
class HookResult:
    """What the hook adds to the prompt: empty context means nothing is added."""

    context: str = ""
    event_name: str = "UserPromptSubmit"
