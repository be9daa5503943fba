"""Waiting on something another process does (a server starting, a file going away)."""

from __future__ import annotations

import time


def wait_for(condition, timeout_s: float = 90.0, every_s: float = 0.2) -> bool:
    """Whether `condition()` came true within `timeout_s`; a bound, not a measurement."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(every_s)
    return False
