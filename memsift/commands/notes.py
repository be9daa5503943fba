"""Commands: notes."""

from __future__ import annotations

COMMANDS: list = []
