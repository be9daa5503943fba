"""A cross-encoder on numpy: MiniLM's first layers, fine-tuned to read a message, the reply
before it and one item together, and say whether the item answers the message.

The bi-encoder (embed.py) compares two vectors made apart; it knows that a passage is on the
message's subject, not whether it answers it. Reading both in one sequence,
`[CLS] message [SEP] reply before [SEP] item [SEP]`, lets attention compare the words
themselves; the head reads the mean of the last layer over the sequence (the pooling MiniLM
was trained with: its [CLS] output starts nearly the same for every input). The layers are trained by memsift/training/cross.py (JAX, off the hook) from
all-MiniLM-L6-v2's own weights and ship as fp16 in memsift/data/cross_encoder.npz; the word
embeddings stay the int8 ones the embedding model already loads, so the file holds only the
layers, the position and type embeddings and the head.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from memsift.model.embed import DIM, MiniLM, _layer_norm, _pad, get_model
from memsift.paths import PACKAGE_DATA

CROSS_FILE = PACKAGE_DATA / "cross_encoder.npz"
MESSAGE_TOKENS = 40  # [CLS] + the message's first words + [SEP]
CONTEXT_TOKENS = 32  # the reply before: its first words + [SEP]
ITEM_TOKENS = 56  # the item's first words + [SEP]: notes and passages are a few lines


class CrossError(Exception):
    """The cross-encoder's weights are missing or damaged."""


def pair_ids(message: str, context: str, item: str) -> tuple[list[int], list[int]]:
    """Token ids and type ids of one (message, reply before, item) sequence."""
    from memsift.model.wordpiece import default_tokenizer

    tok = default_tokenizer()
    first = tok.encode(message, MESSAGE_TOKENS)
    if context:
        first += tok.encode(context, CONTEXT_TOKENS)[1:]
    second = tok.encode(item, ITEM_TOKENS)[1:]
    return first + second, [0] * len(first) + [1] * len(second)


class CrossEncoder:
    def __init__(self, weights: dict[str, np.ndarray], base: MiniLM) -> None:
        self.layers = int(weights["layers"])
        merged = {k: v.astype(np.float32) for k, v in weights.items() if v.ndim and k != "layers"}
        self.model = MiniLM(merged, base.word_q, base.word_scale)
        self.head_w = merged["head.weight"]
        self.head_b = merged["head.bias"]

    def score(self, message: str, context: str, items: Sequence[str]) -> np.ndarray:
        """Probability that each item answers the message, read with the reply before it."""
        if not items:
            return np.zeros(0, np.float32)
        encoded = [pair_ids(message, context, item) for item in items]
        return self.score_ids([ids for ids, _ in encoded], [types for _, types in encoded])

    def score_ids(self, ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]]) -> np.ndarray:
        batch, mask = _pad(ids)
        type_batch, _ = _pad(types)
        n, length = batch.shape
        w = self.model.weights
        words = self.model.word_q[batch].astype(np.float32) * self.model.word_scale[batch]
        hidden = (words + w["embeddings.position_embeddings.weight"][:length]
                  + w["embeddings.token_type_embeddings.weight"][type_batch])
        hidden = _layer_norm(hidden.reshape(-1, DIM), w, "embeddings.LayerNorm")
        bias = None if mask.all() else ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for layer in range(self.layers):
            hidden = self.model._layer(hidden, n, length, bias, f"encoder.layer.{layer}.")
        hidden = hidden.reshape(n, length, DIM)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        logits = pooled @ self.head_w + self.head_b
        return (1.0 / (1.0 + np.exp(-logits[:, 0]))).astype(np.float32)


def load(path: Path = CROSS_FILE) -> CrossEncoder:
    return _load(path)


@lru_cache(maxsize=2)
def _load(path: Path) -> CrossEncoder:
    try:
        with np.load(path) as data:
            weights = {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise CrossError(f"the cross-encoder's weights are missing or damaged: {exc}") from exc
    return CrossEncoder(weights, get_model())


def available(path: Path = CROSS_FILE) -> bool:
    return path.exists()
