"""The words a message and a text share, weighted by how rare they are among the candidates.

The embedding finds passages on the message's subject; it blurs names and rare words ("the
Denver trip", "water_every", "adpulse") that decide which of them it means. `rerank()` takes
the nearest candidates by cosine and reorders them by cosine plus a BM25 score computed over
those candidates alone: no index to keep, a few milliseconds for a hundred passages.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

RERANK_POOL = 128  # nearest candidates by cosine that the words may reorder
LEXICAL_WEIGHT = 0.03  # BM25 points to cosine (chosen on the dev retrieval files: recall@16
#                        0.675 -> 0.85 and 0.675 -> 0.75, recall@2 0.40 -> 0.58, 0.35 -> 0.53)
BM25_K1 = 1.2
BM25_B = 0.75

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")

STOP_WORDS = frozenset(["a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there", "here", "we", "you", "i", "me", "my", "our", "your", "they", "them", "he", "she", "his", "her", "do", "does", "did", "done", "have", "has", "had", "not", "no", "yes", "so", "too", "very", "can", "could", "should", "would", "will", "just", "what", "why", "how", "when", "where", "which", "who", "whom", "about", "into", "over", "under", "again", "last", "time", "new", "all", "any", "some", "more", "most", "other", "same", "than", "also", "only", "own", "out", "up", "down", "off", "let", "lets", "let's", "please", "pls", "ok", "make", "use", "add", "run", "get", "set", "one", "two", "now", "need", "want", "like", "way"])


def _terms(text: str) -> list[str]:
    """Lower-cased words of three letters or more that are not stop words, in order."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP_WORDS]


def content_words(text: str) -> set[str]:
    return set(_terms(text))


def bm25(query: str, texts: Sequence[str]) -> np.ndarray:
    """BM25 of the query against each text, the texts themselves being the collection."""
    docs = [Counter(_terms(t)) for t in texts]
    scores = np.zeros(len(docs), dtype=np.float32)
    wanted = set(_terms(query))
    if not docs or not wanted:
        return scores
    lengths = [sum(d.values()) for d in docs]
    average = (sum(lengths) / len(docs)) or 1.0
    df = Counter(w for d in docs for w in wanted & d.keys())
    n = len(docs)
    for j, (doc, length) in enumerate(zip(docs, lengths)):
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / average)
        for word in sorted(wanted & doc.keys()):  # a fixed order: float32 sums differ by it
            idf = math.log(1.0 + (n - df[word] + 0.5) / (df[word] + 0.5))
            tf = doc[word]
            scores[j] += idf * tf * (BM25_K1 + 1.0) / (tf + norm)
    return scores


def rerank(query: str, texts: Sequence[str], cosines: np.ndarray, keep: int,
           eligible: np.ndarray | None = None) -> list[int]:
    """Indices of the `keep` best texts by cosine plus the words they share with the query,
    among the RERANK_POOL nearest by cosine (and `eligible`, when given)."""
    order = np.argsort(-cosines, kind="stable")
    if eligible is not None:
        order = order[np.asarray(eligible)[order]]
    pool = order[:max(keep, RERANK_POOL)]
    if not len(pool) or not query.strip():
        return [int(i) for i in pool[:keep]]
    fused = cosines[pool] + LEXICAL_WEIGHT * bm25(query, [texts[i] for i in pool])
    return [int(pool[k]) for k in np.argsort(-fused, kind="stable")[:keep]]
