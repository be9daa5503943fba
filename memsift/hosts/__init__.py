"""Host adapters: each host's stdin JSON and transcript -> memsift's Event and Turns."""

from __future__ import annotations


def adapter_for(host: str):
    if host == "claude-code":
        from memsift.hosts import claude_code

        return claude_code
    if host == "codex":
        from memsift.hosts import codex

        return codex
    raise ValueError(f"unknown host {host!r}")
