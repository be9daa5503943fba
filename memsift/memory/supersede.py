"""Supersession and duplicates: a later correction or retraction on the same subject hides the
older note (kept in the file with superseded_by=<id>); near-duplicates merge. docs/lifecycle.md."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memsift.memory.acts import CORRECTION, RETRACTION, note_act
from memsift.memory.notes import Note
from memsift.memory.terms import key_terms

T = TypeVar("T")
_I = re.IGNORECASE

# --- supersession ----------------------------------------------------------------------------

SUPERSEDE_COS = 0.6  # MiniLM: paraphrases of one fact sit above ~0.6, same-topic others below
SUPERSEDE_MIN_TERMS = 2  # and at least two distinctive words in common: the same thing named
SUPERSEDE_LEXICAL_SHARE = 0.4  # without vectors: this share of the old note's words recur
DUPLICATE_COS = 0.92  # near-duplicates: the same note said twice
DUPLICATE_JACCARD = 0.75  # without vectors: three quarters of the words are the same
_FROM_TO = re.compile(
    r"\b(?:moved|switched|swapped|migrated|changed|went|going)\s+(?:\w+\s+)?from\s+(?P<old>.+?)"
    r"\s+(?:to|for|over to)\s+(?P<new>[^.;,]+)", _I)
_NO_LONGER = re.compile(
    r"\b(?:no longer|not any ?more|instead of|replaced|rather than|dropped|retired)\s+"
    r"(?P<old>[^.;,]+)", _I)
_REPLACED_BY = re.compile(r"\b(?P<old>[\w.\-/]+)\s+(?:is|was|has been)\s+replaced\b", _I)
_SWAPPED = re.compile(r"\b(?:swapped|replaced|traded|exchanged)\s+(?:out\s+)?(?P<old>[\w.\-/ ]+?)"
                      r"\s+(?:for|with|by)\b", _I)
SUPERSEDING_ACTS = (CORRECTION, RETRACTION)


def superseded_ids(note: Note) -> set[str]:
    return {part for part in note.meta.get("supersedes", "").split(",") if part}


def is_superseded(note: Note) -> bool:
    return bool(note.meta.get("superseded_by"))


def visible(notes: Sequence[Note]) -> list[Note]:
    """Notes minus those superseded, whether the old note says so (superseded_by) or only the
    newer one does (supersedes=<id>, e.g. after a hand edit)."""
    hidden = set()
    for note in notes:
        hidden |= superseded_ids(note)
    return [n for n in notes if not is_superseded(n) and n.key not in hidden]


def explicit_old_terms(text: str) -> set[str]:
    """The words a correction names as the old state: 'moved from X to Y', 'no longer X'."""
    terms: set[str] = set()
    for pattern in (_FROM_TO, _NO_LONGER, _REPLACED_BY, _SWAPPED):
        for match in pattern.finditer(text):
            terms |= key_terms(match.group("old"))
    return terms


def same_subject(new: Note, old: Note, cos: float | None = None) -> bool:
    """Whether a correction `new` is about the same thing as `old`."""
    new_terms, old_terms = key_terms(new.text), key_terms(old.text)
    shared = new_terms & old_terms
    named_old = explicit_old_terms(new.text)
    if named_old and named_old <= old_terms and shared:
        return True  # "moved from X to Y" and the old note says X
    if cos is not None:
        return cos >= SUPERSEDE_COS and len(shared) >= SUPERSEDE_MIN_TERMS
    return (len(shared) >= SUPERSEDE_MIN_TERMS
            and len(shared) >= SUPERSEDE_LEXICAL_SHARE * max(1, len(old_terms)))


def supersedes(new: Note, old: Note, cos: float | None = None) -> bool:
    """A correction or retraction on the same subject, not a note about itself."""
    if new.key == old.key or note_act(new) not in SUPERSEDING_ACTS:
        return False
    return same_subject(new, old, cos)


def near_duplicate(a: Note, b: Note, cos: float | None = None) -> bool:
    if a.key == b.key:
        return False
    if cos is not None:
        return cos >= DUPLICATE_COS
    ta, tb = key_terms(a.text), key_terms(b.text)
    return bool(ta | tb) and len(ta & tb) / len(ta | tb) >= DUPLICATE_JACCARD


def _order(note: Note) -> tuple[str, int]:
    return (note.written or "", note.line)


@dataclass(frozen=True)
class Link:
    """`new` hides `old`: reason is 'supersedes' (a correction) or 'duplicate' (a merge)."""

    new: str
    old: str
    reason: str


Similarity = Callable[[Note, Note], "float | None"]  # cosine of two notes, None if unknown
COMMON_TERM_SHARE = 0.2  # a word in more than a fifth of the notes names no subject


def find_links(notes: Sequence[Note], similarity: Similarity | None = None) -> list[Link]:
    """Supersessions and merges among the visible notes: each older note is hidden by at most
    one newer note, the nearest earlier match; nothing already hidden is looked at again. Only
    pairs that share a distinctive word are compared (an inverted index), so thousands of
    notes stay cheap."""
    live = sorted(visible(notes), key=_order)
    links: list[Link] = []
    taken: set[str] = set()
    for index, new in enumerate(live):
        for old_index in _candidates(live, index):
            old = live[old_index]
            if old.key in taken:
                continue
            reason = _link_reason(new, old, similarity(new, old) if similarity else None)
            if reason:
                links.append(Link(new.key, old.key, reason))
                taken.add(old.key)
                break
    return links


def _link_reason(new: Note, old: Note, cos: float | None) -> str:
    if near_duplicate(new, old, cos):
        return "duplicate"
    if supersedes(new, old, cos):
        return "supersedes"
    return ""


def _candidates(live: Sequence[Note], index: int) -> list[int]:
    """Earlier notes sharing a distinctive, not too common word with live[index], nearest
    first."""
    postings = _postings(tuple(n.text for n in live))
    limit = max(2, int(COMMON_TERM_SHARE * len(live)))
    found: set[int] = set()
    for term in key_terms(live[index].text):
        ids = postings.get(term, ())
        if len(ids) <= limit:
            found.update(i for i in ids if i < index)
    return sorted(found, reverse=True)


@functools.lru_cache(maxsize=4)
def _postings(texts: tuple[str, ...]) -> dict[str, list[int]]:
    postings: dict[str, list[int]] = {}
    for position, text in enumerate(texts):
        for term in key_terms(text):
            postings.setdefault(term, []).append(position)
    return postings
