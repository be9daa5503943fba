"""Commands: memory."""

from __future__ import annotations

COMMANDS: list = []
