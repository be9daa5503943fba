"""Time, injectable: MEMSIFT_NOW (ISO 8601) fixes the wall clock for replays and tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime


def parse_time(text: str) -> datetime:
    """Parse an ISO time or date; naive values are taken as UTC."""
    value = datetime.fromisoformat(text.strip())
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def now() -> datetime:
    fixed = os.environ.get("MEMSIFT_NOW")
    if fixed:
        try:
            return parse_time(fixed)
        except ValueError:
            pass
    return datetime.now(UTC)


def now_iso() -> str:
    return now().isoformat(timespec="seconds")


class DeadlineExceeded(Exception):
    """A step ran out of its time budget."""


@dataclass
class Deadline:
    """A time budget measured on a monotonic clock (injectable for tests)."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if self.start < 0:
            self.start = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def remaining(self) -> float:
        return max(0.0, self.seconds - self.elapsed())

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def check(self) -> None:
        if self.expired():
            raise DeadlineExceeded(f"budget of {self.seconds:.3f}s spent")

    def sub(self, seconds: float) -> Deadline:
        """A child budget: the smaller of `seconds` and what this one has left."""
        return Deadline(min(seconds, self.remaining()), clock=self.clock)
