"""The part of a long prompt the cascade judges: the question around a paste.

People paste logs, diffs and whole files into a coding agent, with a line or two of question
before or after. Judged whole, a 99,000-character prompt costs every step its budget (the
judge tokenizes all of it, the lexical rerank counts every word) and the question drowns in
the paste. So a prompt over FOCUS_CHARS is judged on the prose outside its fenced blocks when
that is short enough, else on its head and tail, each cut at a word.
"""

from __future__ import annotations

import re

FOCUS_CHARS = 2_000  # longer than almost any typed question; MiniLM reads 256 tokens anyway
HEAD_CHARS = 1_000  # where the question usually is ("why does this fail?" + paste)
TAIL_CHARS = 600  # ...or after the paste ("...any idea?")
GAP = " … "  # stands for what was left out
# A fenced block (``` or ~~~), closed or running to the end of the prompt.
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
MIN_PROSE_CHARS = 12  # less prose than this outside the fences: the paste is all there is


def focus(prompt: str) -> str:
    """`prompt` itself when short; else the question around the paste, within FOCUS_CHARS."""
    if len(prompt) <= FOCUS_CHARS:
        return prompt
    prose = " ".join(_FENCE.sub(GAP, prompt).split())
    if MIN_PROSE_CHARS <= len(prose) <= FOCUS_CHARS:
        return prose
    source = prose if len(prose) >= MIN_PROSE_CHARS else prompt
    return _head(source, HEAD_CHARS) + GAP + _tail(source, TAIL_CHARS)


def _head(text: str, limit: int) -> str:
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip()


def _tail(text: str, limit: int) -> str:
    cut = text[-limit:]
    space = cut.find(" ")
    return (cut[space + 1:] if 0 <= space < limit // 2 else cut).lstrip()
