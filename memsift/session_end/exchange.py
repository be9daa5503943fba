"""The session as the keep decision reads it: a transcript's exchanges (a user message and
everything the assistant answered before the next one, with the exchanges just before it),
redacted, and the view of the whole session: every exchange, what the project held before it
and one embedding of each text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memsift.events import Turn
from memsift.redact import redact_text

CONTEXT_EXCHANGES = 2  # the exchanges before one that its note may need (the corpus's context)


@dataclass(frozen=True)
class Exchange:
    """A user message and everything the assistant answered before the next one."""

    turn: int  # index of the user turn: the note's source
    end: int  # index of the last turn of the exchange
    user: str
    assistant: str
    before: tuple[tuple[str, str], ...] = ()  # the exchanges just before: what "fix it" means

    def text(self) -> str:
        return f"User: {self.user}\nAssistant: {self.assistant}"


def exchanges(turns: Sequence[Turn]) -> list[Exchange]:
    """Pair each user turn with the assistant turns after it; an unanswered one is left
    for a later pass (the reply is still being written)."""
    found: list[Exchange] = []
    for position, turn in enumerate(turns):
        if turn.role != "user":
            continue
        replies = []
        end = position
        for later in turns[position + 1:]:
            if later.role == "user":
                break
            replies.append(later.text)
            end += 1
        if replies:
            before = tuple((e.user, e.assistant) for e in found[-CONTEXT_EXCHANGES:])
            found.append(Exchange(position, end, turn.text, "\n".join(replies), before))
    return found


def redacted(exchange: Exchange) -> Exchange:
    """The exchange with every secret replaced, in the exchanges before it as well (a short
    "fix it" borrows its note from the reply before)."""
    return Exchange(exchange.turn, exchange.end, redact_text(exchange.user),
                    redact_text(exchange.assistant),
                    tuple((redact_text(u), redact_text(a)) for u, a in exchange.before))


@dataclass
class SessionView:
    """The whole session as the keep decision reads it: every exchange (redacted), what the
    project held before it, and one embedding of each text."""

    exchanges: Sequence[Exchange]
    memory: Any  # memsift.session_end.held.ProjectMemory
    vectors: dict[str, Any] = field(default_factory=dict)

    def embed(self, texts: Sequence[str]):
        from memsift.model.embed import embed

        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        for text, vector in zip(missing, embed(missing)):
            self.vectors[text] = vector
        import numpy as np

        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 384))

    def restated(self, head, exchange: Exchange):
        """The held item this exchange repeats, or None (memsift.session_end.held)."""
        from memsift.session_end.held import words_of

        user, reply = self.embed([exchange.user, exchange.assistant])
        return self.memory.restated(head, user, reply, words_of(exchange.user,
                                                                 exchange.assistant))


def session_view(exchanges_: Sequence[Exchange], memory=None) -> SessionView:
    from memsift.session_end.held import ProjectMemory

    view = SessionView(exchanges_, memory if memory is not None else ProjectMemory())
    view.embed([t for e in exchanges_ for t in (e.user, e.assistant)])
    return view
