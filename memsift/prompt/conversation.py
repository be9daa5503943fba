"""The conversation as the cascade reads it: the session's recent text (what it already holds:
memsift/held.py tests an item against it), the last turns, and the names a message uses."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memsift.events import Turn
from memsift.held import TAIL_CHARS


def recent_text(turns: Sequence[Turn], prompt: str) -> str:
    """The session's text before this message (the message itself is not 'already held'),
    its last TAIL_CHARS characters."""
    turns = list(turns)
    if turns and turns[-1].role == "user" and _same(turns[-1].text, prompt):
        turns = turns[:-1]
    text = "\n".join(t.text for t in turns)
    return text[-TAIL_CHARS:]


def recent_turns(turns: Sequence[Turn], prompt: str, n: int) -> list[Turn]:
    """The last `n` turns before this message (the transcript may end with it already)."""
    turns = list(turns)
    if turns and turns[-1].role == "user" and _same(turns[-1].text, prompt):
        turns = turns[:-1]
    return turns[-n:] if n > 0 else []


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


# Capitalised words that start no name: pronouns, question words, articles.
_NOT_NAMES = frozenset({
    "i", "i'm", "i've", "i'll", "i'd", "ok", "the", "a", "an", "what", "when", "where", "why",
    "how", "who", "which", "is", "are", "do", "does", "did", "can", "could", "should", "would",
    "will", "in", "on", "at", "for", "and", "but", "or", "if", "so", "it", "this", "that", "my",
    "our", "we", "you", "they", "he", "she", "his", "her", "its", "their", "there", "then",
    "also", "please", "thanks",
})
_CALENDAR = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday",
})  # capitalised, but a date names no subject
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][A-Za-z0-9]+)")


def names(text: str) -> set[str]:
    """Names the message uses: capitalised words not opening a sentence (people, products,
    places), lower-cased. Identifiers and lower-case words are left to the judge."""
    found = set()
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip()
        word = match.group(1).lower()
        if before and before[-1] not in '.!?:;"\n' and word not in _NOT_NAMES | _CALENDAR:
            found.add(word)
    return found


def mentions_any(text: str, wanted: set[str]) -> bool:
    """Whether `text` mentions one of the names (whole words, case aside)."""
    return bool(wanted & set(re.findall(r"[a-z0-9]+", text.lower())))
