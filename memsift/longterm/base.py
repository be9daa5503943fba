"""The interface both long-term backends (embedded store, Cognee) implement."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from memsift.clock import Deadline


class LongTermError(Exception):
    """The store could not answer: refused, timed out, unauthorised, bad reply."""

    def __init__(self, message: str, *, reason: str = "error") -> None:
        super().__init__(message)
        self.reason = reason  # refused | timeout | auth | server | bad_reply | error


@dataclass(frozen=True)
class Passage:
    id: str
    text: str
    written: str = ""  # ISO date the passage was written
    source: str = ""  # where it came from, for the pointer shown to the agent
    similarity: float = 0.0  # the store's own similarity, 0..1, higher is closer
    meta: dict = field(default_factory=dict, compare=False)


class LongTermStore(Protocol):
    name: str

    def search(self, query: str, top_k: int, deadline: Deadline) -> list[Passage]:
        """The top_k passages nearest the query; raises LongTermError, never hangs past
        the deadline."""
        ...

    def add(self, passages: Iterable[Passage]) -> int:
        """Store passages (idempotent by id); returns how many were new."""
        ...

    def remove(self, ids: Iterable[str]) -> int:
        ...

    def count(self) -> int:
        ...
