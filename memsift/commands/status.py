"""Commands: status."""

from __future__ import annotations

COMMANDS: list = []
