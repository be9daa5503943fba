"""Session end: hand the transcript to a detached worker (placeholder)."""

from __future__ import annotations

from memsift.events import Event


def hand_off(event: Event, settings) -> None:
    return None
