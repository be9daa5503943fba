"""Waiting on something another process does (a server starting, a file going away), and the
prompt budget a hook process gets in tests that are about what it answers, not how fast."""

from __future__ import annotations

import time

# A cold hook process on a loaded test machine can pass the offline one-second budget; the
# waits are memsift bench's to measure.
PATIENT_BUDGET = {"MEMSIFT_BUDGET_PROMPT_S": "10"}


def wait_for(condition, timeout_s: float = 90.0, every_s: float = 0.2) -> bool:
    """Whether `condition()` came true within `timeout_s`; a bound, not a measurement."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(every_s)
    return False
