"""The words that name a note's subject: lower-cased, stemmed, stop words out; and the cosine of
two optional vectors. Shared by supersession, reinforcement and rules."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

# --- words -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")
_STOPWORD_TEXT = (
    "the a an and or but if then than that this these those there here with without from into"
    " onto for of on in at by to as is are was were be been being it its it's we our you your"
    " they them their he she his her i me my mine not no yes do does did done have has had can"
    " could would should will shall may might must just also only very so too now when where"
    " what which who whom how why all any some each every one two new old more most less same"
    " other about over under after before again once still already ever never always actually"
    " anymore longer instead let's lets use used using make made get got like want need please"
    " ok okay thanks sure go going went gone per via off out up down it'll we'll don't doesn't"
    " isn't aren't wasn't won't can't hasn't didn't that's")
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "ied", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                word += "y"
            elif suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]
            break
    return word


@functools.lru_cache(maxsize=8192)
def key_terms(text: str) -> frozenset[str]:
    """The distinctive words of a text: lowercased, stemmed, stopwords and short words out
    (identifiers like dbt_daily or 10.0.3.12 kept whole). Cached: consolidation asks for the
    same notes' words many times."""
    words = _WORD.findall(text.lower().replace("`", " "))
    return frozenset(_stem(w) for w in words
                     if w not in STOPWORDS and (len(w) >= 3 or any(c.isdigit() for c in w)))


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float | None:
    if a is None or b is None:
        return None
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0
