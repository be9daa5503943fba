"""A judge on shared words, behind the Judge protocol: deterministic and instant, so tests of
the prompt path measure the services and the cascade, not a model."""

from __future__ import annotations

import re

import numpy as np

from fakes.openai_server import hash_vector

SHARED_WORDS = 3  # an item sharing this many words with the message answers it
ANSWERS = 0.7  # sure enough to be added (notes, and passages with their higher bar), not so
# sure that a note alone is taken as the whole answer and the long-term search skipped (the
# cascade's bars sit at shares of the headroom above the default 0.5 threshold: 0.625, 0.75)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class WordJudge:
    name = "words"

    def kind(self, message, deadline=None):
        return {"builds_on": 0.9, "reaction": 0.1}

    def choose(self, question, options, context, deadline=None):
        return {o: 1.0 / len(options) for o in options}

    def score(self, message, items, deadline=None):
        words = _words(message)
        return [ANSWERS if len(words & _words(item)) >= SHARED_WORDS else 0.1 for item in items]

    def worth_keeping(self, text, deadline=None):
        return 0.9


def hash_embedder():
    """An (embed_fn, model_id) pair of hash vectors: equal texts, equal vectors."""
    return (lambda texts: np.array([hash_vector(t) for t in texts], np.float32)), "hash-test"
