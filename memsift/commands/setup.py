"""Commands: setup."""

from __future__ import annotations

COMMANDS: list = []
