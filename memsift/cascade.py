"""The prompt cascade (placeholder until the cascade lands: adds nothing)."""

from __future__ import annotations

from memsift.events import Event, HookResult


def run_prompt(event: Event, settings, started: float | None = None) -> HookResult:
    return HookResult()
