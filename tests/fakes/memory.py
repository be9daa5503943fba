"""Small real implementations of the Judge and LongTermStore protocols and of the embedding
interface, for tests of the cascade: fast, deterministic, and some really slow on purpose."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence

import numpy as np

from memsift.judge.base import KINDS
from memsift.longterm.base import LongTermError, Passage

DIM = 64
WORD_MODEL_ID = "test-bag-of-words"
_WORD = re.compile(r"[a-z0-9]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def bag_embed(texts: Sequence[str]) -> np.ndarray:
    """Hashed bag of words, L2-normalised: texts sharing words are close."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in _words(text):
            out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


BAG = (bag_embed, WORD_MODEL_ID)


class WordJudge:
    """Kinds from a table (default: a search kind); an item's score is the share of the
    message's words it holds, so tests choose what answers by choosing words."""

    name = "words"
    threshold = 0.5

    def __init__(self, kinds: dict[str, str] | None = None, default_kind: str = "past_choice",
                 worth: float = 0.9) -> None:
        self.kinds = kinds or {}
        self.default_kind = default_kind
        self.worth = worth
        self.calls: list[str] = []

    def kind(self, message, deadline=None):
        self.calls.append("kind")
        chosen = self.kinds.get(message, self.default_kind)
        rest = (1.0 - 0.9) / (len(KINDS) - 1)
        return {k: 0.9 if k == chosen else rest for k in KINDS}

    def score(self, message, items, deadline=None):
        self.calls.append("score")
        asked = _words(message)
        return [len(asked & _words(item)) / max(1, len(asked)) for item in items]

    def worth_keeping(self, text, deadline=None):
        self.calls.append("worth")
        return self.worth

    def choose(self, question, options, context, deadline=None):
        return {o: 1.0 / len(options) for o in options}


class SleepyJudge(WordJudge):
    """Really sleeps in the named call and ignores its deadline: only the cascade's own
    budget can cut it off."""

    def __init__(self, slow: str, seconds: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.slow = slow
        self.seconds = seconds

    def _nap(self, call: str) -> None:
        if call == self.slow:
            time.sleep(self.seconds)

    def kind(self, message, deadline=None):
        self._nap("kind")
        return super().kind(message, deadline)

    def score(self, message, items, deadline=None):
        self._nap("score")
        return super().score(message, items, deadline)


class MemoryStore:
    """A long-term store in a list; `delay` makes every search really take that long."""

    name = "memory"

    def __init__(self, passages: Sequence[Passage] = (), delay: float = 0.0,
                 fail: str = "") -> None:
        self.passages = {p.id: p for p in passages}
        self.delay = delay
        self.fail = fail
        self.searches = 0

    def search(self, query, top_k, deadline):
        self.searches += 1
        if self.delay:
            time.sleep(self.delay)
        if self.fail:
            raise LongTermError("store down", reason=self.fail)
        items = list(self.passages.values())
        vectors = bag_embed([p.text for p in items]) if items else np.zeros((0, DIM))
        scores = vectors @ bag_embed([query])[0] if items else []
        order = np.argsort(-np.asarray(scores), kind="stable")[:top_k]
        return [items[i] for i in order]

    def add(self, passages):
        fresh = [p for p in passages if p.id not in self.passages]
        self.passages.update({p.id: p for p in fresh})
        return len(fresh)

    def remove(self, ids):
        gone = [i for i in ids if self.passages.pop(i, None) is not None]
        return len(gone)

    def count(self):
        return len(self.passages)
