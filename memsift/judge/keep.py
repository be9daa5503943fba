"""The offline keep decision for one exchange (a user message and the assistant's reply).

Keep what will save repeating work if the subject comes back: a technical choice and its
reason, a constraint that will cause trouble, an incident and its fix, a procedure. Reactions,
one-off tasks, UI details and general knowledge stay in the conversation.

A logistic-regression head over hashed words and word pairs plus a few cheap cue features
(reason words, error names, numbers with units, length). It needs no model download and
answers in well under a millisecond; its weights (memsift/data/keep_head.npz) are trained by
`train()` on the labelled part of memsift/data/keep_exchanges.jsonl that the benchmark never
tests on (memsift.bench.keep).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

HASH_DIM = 4096  # buckets for words and word pairs; collisions cost little at this size
KEEP_THRESHOLD = 0.5  # probability above which an exchange becomes a note
L2 = 1e-3  # weight decay: the labelled set is small, keep the head from memorising it
EPOCHS = 400
LEARNING_RATE = 0.5

_WORD = re.compile(r"[a-z][a-z0-9_']*|\d+(?:\.\d+)?")
REASON_CUES = ("because", "so that", "since", "instead of", "otherwise", "decided", "root cause",
               "the fix was", "caused", "never", "always", "must", "only", "don't", "do not",
               "not yet", "until", "first", "then", "keep it", "watch for", "if it fails")
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\berror\[|\bpanicked\b|\bSQLSTATE|"
                         r"\bOOM\b|\bfatal\b|\bEXC_\w+")
_MEASURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|MB|GB|%|seconds|minutes|rows|px)\b")
_REACTION = re.compile(r"(?i)^\s*(?:thanks|thank you|ok|okay|great|perfect|nice|cool|lgtm|"
                       r"hmm|no that's wrong|yes)\b")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _bucket(token: str) -> tuple[int, float]:
    value = zlib.crc32(token.encode())
    return value % HASH_DIM, 1.0 if value & 0x80000000 else -1.0


def _hashed(prefix: str, words: Sequence[str], out: np.ndarray) -> None:
    tokens = [prefix + w for w in words]
    tokens += [f"{prefix}{a} {b}" for a, b in itertools.pairwise(words)]
    for token in tokens:
        index, sign = _bucket(token)
        out[index] += sign


def _cues(user: str, reply: str) -> list[float]:
    lowered = reply.lower()
    reason = sum(lowered.count(cue) for cue in REASON_CUES)
    words = len(_words(reply))
    return [
        math.log1p(reason),
        math.log1p(len(_ERROR_NAME.findall(user + " " + reply))),
        math.log1p(len(_MEASURE.findall(reply))),
        math.log1p(words) / 5.0,
        1.0 if _REACTION.match(user) else 0.0,
        1.0 if words < 15 else 0.0,
        1.0,  # bias
    ]


N_CUES = 7


def features(user: str, reply: str) -> np.ndarray:
    """One row: hashed words of each side (L2-normalised), then the cue features."""
    hashed = np.zeros(HASH_DIM, dtype=np.float32)
    _hashed("u:", _words(user), hashed)
    _hashed("a:", _words(reply), hashed)
    norm = float(np.linalg.norm(hashed))
    if norm:
        hashed /= norm
    return np.concatenate([hashed, np.asarray(_cues(user, reply), dtype=np.float32)])


@dataclass(frozen=True)
class Exchange:
    user: str
    assistant: str
    keep: int = 0
    template: str = ""


def load_exchanges(path: Path | None = None) -> list[Exchange]:
    if path is None:
        text = resources.files("memsift.data").joinpath("keep_exchanges.jsonl").read_text("utf-8")
    else:
        text = path.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [Exchange(r["user"], r["assistant"], int(r["keep"]), r.get("template", ""))
            for r in rows]


def held_apart(exchange: Exchange) -> bool:
    """The test part: whole templates (one in four), never seen in training."""
    return zlib.crc32(exchange.template.encode()) % 4 == 0


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def train(exchanges: Iterable[Exchange]) -> np.ndarray:
    """Full-batch gradient descent on the logistic loss, balanced classes."""
    rows = list(exchanges)
    x = np.stack([features(e.user, e.assistant) for e in rows])
    y = np.asarray([e.keep for e in rows], dtype=np.float32)
    positive = max(1.0, float(y.sum()))
    weight_of = np.where(y == 1, len(y) / (2 * positive), len(y) / (2 * max(1.0, len(y) - positive)))
    w = np.zeros(x.shape[1], dtype=np.float32)
    for _ in range(EPOCHS):
        error = (_sigmoid(x @ w) - y) * weight_of
        w -= LEARNING_RATE * (x.T @ error / len(y) + L2 * w)
    return w


def weights_path() -> Path:
    return Path(str(resources.files("memsift.data").joinpath("keep_head.npz")))


def save(weights: np.ndarray, path: Path | None = None) -> None:
    np.savez(path or weights_path(), weights=weights, hash_dim=HASH_DIM)


@lru_cache(maxsize=1)
def _load() -> np.ndarray:
    with np.load(weights_path()) as data:
        if int(data["hash_dim"]) != HASH_DIM:
            raise ValueError("keep head was trained with another feature size; retrain it")
        return data["weights"]


def keep_probability(user: str, reply: str, weights: np.ndarray | None = None) -> float:
    """Probability that this exchange is worth a note."""
    w = _load() if weights is None else weights
    return float(_sigmoid(np.asarray(features(user, reply) @ w)))


def main() -> None:
    """Retrain the head on the training part and write its weights."""
    rows = [e for e in load_exchanges() if not held_apart(e)]
    save(train(rows))
    print(f"trained on {len(rows)} exchanges -> {weights_path()}")


if __name__ == "__main__":
    main()
