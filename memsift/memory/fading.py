"""Fading and reinforcement: the FSRS power forgetting curve R(t, S) = (1 + F*t/S)^D, with the
stability S seeded by salience and moved by use (a note the session built on) or contradiction.
Retrievability orders and breaks ties; nothing is ever deleted for fading. docs/lifecycle.md."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TypeVar

from memsift.clock import parse_time
from memsift.memory.acts import note_salience
from memsift.memory.notes import Note
from memsift.memory.terms import key_terms

T = TypeVar("T")
_I = re.IGNORECASE

# --- fading ----------------------------------------------------------------------------------

# FSRS-4.5 power forgetting curve. D and F are chosen so that R(S, S) = 0.9 exactly: stability
# is "the days until recall falls to 90%".
DECAY = -0.5
FACTOR = 19 / 81
S_MIN = 2.0  # days: a routine lookup is as good as fresh for a couple of days, then it is stale
S_MAX = 365.0  # days: an emphatic correction from the user holds at 90% for a year
S_CAP = 3650.0  # days: reinforcement never makes a note older than ten years look fresh
USE_GAIN = 2.0  # a note the session built on doubles its stability (FSRS grows S by ~2-3x)
CONTRADICT_FACTOR = 0.25  # a note the user called wrong keeps a quarter: it sinks, not vanishes
FADED_R = 0.5  # below this a note counts as faded in reports (it is still kept and searchable)


def retrievability(days: float, stability: float) -> float:
    """R(t, S) = (1 + F*t/S)^D; 1 at t=0, 0.9 at t=S, falling ever slower after."""
    days = max(0.0, days)
    return (1.0 + FACTOR * days / max(stability, 1e-9)) ** DECAY


def initial_stability(sal: float) -> float:
    """Log-linear between S_MIN (salience 0) and S_MAX (salience 1)."""
    sal = min(1.0, max(0.0, sal))
    return S_MIN * (S_MAX / S_MIN) ** sal


def reinforced(stability: float) -> float:
    return min(S_CAP, stability * USE_GAIN)


def weakened(stability: float) -> float:
    return max(S_MIN, stability * CONTRADICT_FACTOR)


def _date(text: str) -> datetime | None:
    try:
        return parse_time(text) if text else None
    except ValueError:
        return None


def days_between(earlier: datetime | None, later: datetime) -> float:
    return 0.0 if earlier is None else max(0.0, (later - earlier).total_seconds() / 86400.0)


def note_stability(note: Note, state: Mapping[str, Mapping] | None = None) -> float:
    entry = (state or {}).get(note.key) or {}
    try:
        return float(entry["s"])
    except (KeyError, TypeError, ValueError):
        return initial_stability(note_salience(note))


def note_retrievability(note: Note, now: datetime,
                        state: Mapping[str, Mapping] | None = None) -> float:
    """R of a note now: time since its last review (reinforcement) or its writing."""
    entry = (state or {}).get(note.key) or {}
    last = _date(str(entry.get("last", ""))) or _date(note.written)
    return retrievability(days_between(last, now), note_stability(note, state))


SCORE_BAND = 0.05  # judge scores closer than this are a tie: the judge's own noise is this size


def rank(notes: Sequence[T], scores: Mapping[str, float], now: datetime,
         state: Mapping[str, Mapping] | None = None) -> list[T]:
    """Order notes for adding under the budget: by judge score in bands of SCORE_BAND, then by
    retrievability, then by the exact score. `scores` are keyed by note key; one without a
    score counts 0. Anything with .text and .written and a .key or .id ranks (the cascade's
    items too: a long-term passage fades by its date like a note)."""
    def key(item: T) -> tuple[float, float, float]:
        note = as_note(item)
        score = float(scores.get(note.key, 0.0))
        return (-math.floor(score / SCORE_BAND), -note_retrievability(note, now, state), -score)

    return sorted(notes, key=key)


def as_note(item) -> Note:
    if isinstance(item, Note):
        return item
    return Note(text=item.text, id=getattr(item, "key", "") or getattr(item, "id", ""),
                written=getattr(item, "written", "") or "", meta=getattr(item, "meta", {}) or {})


# --- reinforcement ---------------------------------------------------------------------------

USE_MIN_TERMS = 2  # a reply that repeats two of a note's distinctive words built on it
_CONTRADICTION_CUES = re.compile(
    r"\b(that'?s (wrong|not right|not true|outdated|old|stale)|is wrong|was wrong|not true"
    r"|outdated|out of date|no longer|not any ?more|anymore|isn'?t (right|true|the case)"
    r"|we don'?t do that|that changed|has changed|moved)\b|^\s*(no|nope|wrong)\b", _I)
USED = "used"
CONTRADICTED = "contradicted"


def distinctive_terms(note: Note, message: str = "") -> set[str]:
    """The note's words that the prompt did not already carry: echoing those means the note,
    not the question, was used."""
    return key_terms(note.text) - key_terms(message)


def usage(note: Note, message: str, reply: str, next_user: str) -> str | None:
    """How the session treated a note added to `message`: USED when the reply or the next user
    turn builds on its distinctive words, CONTRADICTED when the next user turn says it is wrong
    or outdated while speaking of it, None when neither."""
    terms = distinctive_terms(note, message)
    in_reply = len(terms & key_terms(reply))
    in_next = len(terms & key_terms(next_user))
    if next_user and _CONTRADICTION_CUES.search(next_user) and (in_next or in_reply):
        return CONTRADICTED
    if in_reply >= USE_MIN_TERMS or in_next >= USE_MIN_TERMS:
        return USED
    return None


def apply_usage(entry: Mapping | None, note: Note, verdict: str, when: str) -> dict:
    """The state entry of a note after one verdict: stability up or down, review time now."""
    stability = float((entry or {}).get("s") or initial_stability(note_salience(note)))
    out = dict(entry or {})
    if verdict == USED:
        out["s"] = round(reinforced(stability), 3)
        out["last"] = when
        out["used"] = int(out.get("used", 0)) + 1
    elif verdict == CONTRADICTED:
        out["s"] = round(weakened(stability), 3)
        out["contradicted"] = int(out.get("contradicted", 0)) + 1
    return out
