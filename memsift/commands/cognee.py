"""Commands: cognee."""

from __future__ import annotations

COMMANDS: list = []
