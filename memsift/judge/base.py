"""The Judge protocol every decision-model backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memsift.clock import Deadline

# The eleven kinds of message (../shared/bench/FORMAT.md names them the same way).
NO_SEARCH_KINDS = ("reaction", "action", "instruction", "general", "conversation")
SEARCH_KINDS = ("decision", "past_choice", "resume", "recurring", "builds_on", "earlier_exchange")
KINDS = NO_SEARCH_KINDS + SEARCH_KINDS

KIND_DESCRIPTIONS = {
    "reaction": "a reaction to the last answer (thanks, ok, that's wrong)",
    "action": "an action on the finished work (commit, run the tests, push)",
    "instruction": "a complete instruction that carries everything it needs",
    "general": "a question of general knowledge, not about this project",
    "conversation": "a question about the ongoing conversation itself",
    "decision": "a new decision to make about the project",
    "past_choice": "a question about a choice made in the past and its reason",
    "resume": "resuming earlier work",
    "recurring": "a problem that has happened before",
    "builds_on": "a task that builds on what already exists in the project",
    "earlier_exchange": "a reference to an earlier exchange or session",
}


class JudgeError(Exception):
    """A backend could not answer (timeout, refused, bad output). Callers add nothing.

    `reason` is one short word for logs and health checks: timeout, refused (no connection),
    auth, server (an error status), bad_reply (an answer that is none of the options),
    config (the backend is not set up well enough to ask), rejected (the server refused a
    request of ours: a 400/422, with its detail), rate_limited (429), overloaded (529).
    `retry_after_s` is how long the server asked us to wait, when it said.
    """

    def __init__(self, message: str = "", reason: str = "error", *,
                 retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.retry_after_s = retry_after_s


class Judge(Protocol):
    """Answers with choices, probabilities and scores; each call within its deadline."""

    name: str

    def choose(
        self,
        question: str,
        options: Sequence[str],
        context: str,
        deadline: Deadline | None = None,
    ) -> dict[str, float]:
        """Probability of each option (sums to 1) for a question about `context`."""
        ...

    def kind(self, message: str, deadline: Deadline | None = None) -> dict[str, float]:
        """Probability of each of the eleven KINDS for a user message."""
        ...

    def score(
        self,
        message: str,
        items: Sequence[str],
        deadline: Deadline | None = None,
    ) -> list[float]:
        """For each item alone: probability (0..1) that it answers the message."""
        ...

    def worth_keeping(self, text: str, deadline: Deadline | None = None) -> float:
        """Probability that the subject (a message or an exchange) is worth remembering:
        a choice and its reason, a constraint, a problem and its fix, a procedure."""
        ...


def needs_search(kinds: dict[str, float]) -> float:
    """Probability mass on the kinds that may call for memory."""
    return sum(p for k, p in kinds.items() if k in SEARCH_KINDS)
