"""Commands: judge."""

from __future__ import annotations

COMMANDS: list = []
