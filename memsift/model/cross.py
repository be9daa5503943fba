"""A cross-encoder on numpy: MiniLM's first layers, fine-tuned to read a message, the reply
before it and one item together, and say whether the item answers the message.

The bi-encoder (embed.py) compares two vectors made apart; it knows that a passage is on the
message's subject, not whether it answers it. Reading both in one sequence,
`[CLS] message [SEP] reply before [SEP] item [SEP]`, lets attention compare the words
themselves; the head reads the mean of the last layer over the sequence (the pooling MiniLM
was trained with: its [CLS] output starts nearly the same for every input). The layers are
trained by memsift/training/cross.py (JAX, off the hook) from all-MiniLM-L6-v2's own weights
and ship as int8 columns with a scale each (quantize) in memsift/data/cross_encoder.npz; the
word embeddings stay the int8 ones the embedding model already loads, so the file holds only
the layers, the position and type embeddings and the head.

Reading that file costs a fresh process tens of ms (unzip, int8 -> fp32); like the embedding model,
its float32 copy is cached once in the user's cache folder and mmapped by every later process.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from memsift.model import floatcache
from memsift.model.embed import DIM, MiniLM, _layer_norm, _pad, get_model
from memsift.paths import PACKAGE_DATA

CROSS_FILE = PACKAGE_DATA / "cross_encoder.npz"
KEEP_CROSS_FILE = PACKAGE_DATA / "keep_cross.npz"  # the session end's, over one exchange
KIND_FILE = PACKAGE_DATA / "kind_encoder.npz"  # the message's kind, over the turn before
CACHE_FORMAT = 2  # bump when the cache layout changes: old caches are rebuilt
MESSAGE_TOKENS = 40  # [CLS] + the message's first words + [SEP]
CONTEXT_TOKENS = 32  # the reply before: its first words + [SEP]
ITEM_TOKENS = 56  # the item's first words + [SEP]: notes and passages are a few lines
KEEP_USER_TOKENS = 48  # the keep cross-encoder: [CLS] + the message + [SEP]
KEEP_REPLY_TOKENS = 81  # the reply's first words + [SEP]: the fact is usually said first
KEEP_BEFORE_TOKENS = 32  # the reply before: what a short "yes, do that" accepts
KIND_MESSAGE_TOKENS = 48  # the kind encoder: [CLS] + the message + [SEP]
KIND_REPLY_TOKENS = 40  # the agent's reply before it: its first words + [SEP]
KIND_BEFORE_TOKENS = 24  # the user's message before that: its first words + [SEP]


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


def keep_ids(user: str, reply: str, before: str = "") -> tuple[list[int], list[int]]:
    """Token ids and type ids of one exchange, `[CLS] message [SEP] reply [SEP] reply before
    [SEP]`, as the session end's keep cross-encoder reads it (memsift.judge.keep)."""
    from memsift.model.wordpiece import default_tokenizer

    tok = default_tokenizer()
    first = tok.encode(user, KEEP_USER_TOKENS)
    second = tok.encode(reply, KEEP_REPLY_TOKENS)[1:]
    if before:
        second += tok.encode(before, KEEP_BEFORE_TOKENS)[1:]
    return first + second, [0] * len(first) + [1] * len(second)


def kind_ids(message: str, reply: str, before: str) -> tuple[list[int], list[int]]:
    """Token ids and type ids of `[CLS] message [SEP] reply before [SEP] user before [SEP]`,
    as the kind encoder reads a message in its context (memsift.judge.local)."""
    from memsift.model.wordpiece import default_tokenizer

    tok = default_tokenizer()
    first = tok.encode(message, KIND_MESSAGE_TOKENS)
    second: list[int] = []
    if reply:
        second += tok.encode(reply, KIND_REPLY_TOKENS)[1:]
    if before:
        second += tok.encode(before, KIND_BEFORE_TOKENS)[1:]
    return first + second, [0] * len(first) + [1] * len(second)


class CrossEncoder:
    def __init__(self, weights: dict[str, np.ndarray], base: MiniLM) -> None:
        self.layers = int(weights["layers"])
        merged = {k: v.astype(np.float32, copy=False)
                  for k, v in weights.items() if v.ndim and k != "layers"}
        self.model = MiniLM(merged, base.word_q, base.word_scale)
        self.head_w = merged["head.weight"]
        self.head_b = merged["head.bias"]

    def score(self, message: str, context: str, items: Sequence[str]) -> np.ndarray:
        """Probability that each item answers the message, read with the reply before it."""
        if not items:
            return np.zeros(0, np.float32)
        encoded = [pair_ids(message, context, item) for item in items]
        return self.score_ids([ids for ids, _ in encoded], [types for _, types in encoded])

    def score_exchanges(self, exchanges: Sequence[tuple[str, str, str]], batch: int = 16
                        ) -> np.ndarray:
        """Probability that each (message, reply, reply before) exchange is worth keeping
        (keep_ids)."""
        out = [np.zeros(0, np.float32)]
        for start in range(0, len(exchanges), batch):
            encoded = [keep_ids(*exchange) for exchange in exchanges[start:start + batch]]
            out.append(self.score_ids([i for i, _ in encoded], [t for _, t in encoded]))
        return np.concatenate(out)

    def kind_logits(self, message: str, reply: str, before: str) -> np.ndarray:
        """The head's outputs for one message read with the turn before it (kind_ids): the
        kind encoder's eleven kind logits, then whether the turn needs memory."""
        ids, types = kind_ids(message, reply, before)
        return self.logits_ids([ids], [types])[0]

    def score_ids(self, ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]]) -> np.ndarray:
        """The probability of the head's first output for each sequence."""
        logits = self.logits_ids(ids, types)
        return (1.0 / (1.0 + np.exp(-logits[:, 0]))).astype(np.float32)

    def logits_ids(self, ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]]
                   ) -> np.ndarray:
        """The head's outputs, (sequences, outputs), over the mean of the last layer."""
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
        return pooled @ self.head_w + self.head_b


def load(path: Path = CROSS_FILE) -> CrossEncoder:
    return _load(path)


@lru_cache(maxsize=4)
def _load(path: Path) -> CrossEncoder:
    from memsift.paths import get_paths

    # One cache folder per weights file (its bytes are checked too: a file of the same name
    # from elsewhere rebuilds it).
    return CrossEncoder(cached_weights(path, cache_folder(path, get_paths().cache_dir)),
                        get_model())


def cache_folder(path: Path, cache_dir: Path) -> Path:
    """Where the float32 copy of the weights file `path` is cached."""
    return cache_dir / path.stem


QUANTIZED = ".int8"  # a matrix stored as int8 columns; its scales under name + SCALES
SCALES = ".scale"


def read_weights(path: Path) -> dict[str, np.ndarray]:
    """The weights of `path` by name, int8 matrices expanded to float32 (quantize)."""
    try:
        with np.load(path) as data:
            stored = {name: data[name] for name in data.files}
        weights = {}
        for name, array in stored.items():
            if name.endswith(SCALES):
                continue
            if name.endswith(QUANTIZED):
                base = name[: -len(QUANTIZED)]
                weights[base] = array.astype(np.float32) * stored[base + SCALES].astype(np.float32)
            else:
                weights[name] = array
    except (OSError, ValueError, KeyError) as exc:  # KeyError: an int8 matrix without its scales
        raise CrossError(f"the cross-encoder's weights are missing or damaged: {exc}") from exc
    return weights


def quantize(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The layers' matrices as int8 with one float16 scale per output column (symmetric,
    the largest magnitude at 127), everything else as float16: half the bytes of float16
    throughout. read_weights expands them again."""
    out = {}
    for name, array in weights.items():
        array = np.asarray(array, np.float32)
        if array.ndim == 2 and name.startswith("encoder.layer."):
            scale = np.maximum(np.abs(array).max(axis=0, keepdims=True), 1e-8) / 127.0
            scale = scale.astype(np.float16)
            out[name + QUANTIZED] = np.clip(np.rint(array / scale.astype(np.float32)),
                                            -127, 127).astype(np.int8)
            out[name + SCALES] = scale
        else:
            out[name] = array.astype(np.float16)
    return out


def cached_weights(path: Path, cache: Path) -> dict[str, np.ndarray]:
    """The weights as float32 views of the cache's mmap (memsift.model.floatcache), the cache
    (re)built from `path` when it is missing or was made from other bytes. A cache that cannot
    be written or read is no error: the weights then come from `path` itself."""
    meta = floatcache.read_meta(cache)
    if meta is None or not _meta_matches(meta, path):
        weights = read_weights(path)
        try:
            meta = write_cache(cache, path, weights)
        except OSError:
            return weights
    try:
        return {"layers": np.asarray(meta["layers"]), **floatcache.unpack(cache, meta["index"])}
    except (OSError, ValueError, KeyError, TypeError):
        return read_weights(path)


def cache_ready(path: Path, cache: Path) -> bool:
    """Whether `cache` holds the weights of `path`: cached_weights would open it as it is."""
    meta = floatcache.read_meta(cache)
    try:
        return meta is not None and _meta_matches(meta, path)
    except CrossError:
        return False


def _meta_matches(meta: dict, path: Path) -> bool:
    if meta.get("format") != CACHE_FORMAT:
        return False
    try:
        return floatcache.unchanged(meta, path)
    except OSError as exc:
        raise CrossError(f"the cross-encoder's weights are missing: {exc}") from exc


def write_cache(cache: Path, path: Path, weights: dict[str, np.ndarray]) -> dict:
    floats, index = floatcache.pack(
        {name: array for name, array in weights.items() if name != "layers" and array.ndim})
    meta = {"format": CACHE_FORMAT, **floatcache.stamp(path), "layers": int(weights["layers"]),
            "index": index}
    floatcache.write(cache, meta, {floatcache.WEIGHTS: floats})
    return meta


def available(path: Path = CROSS_FILE) -> bool:
    return path.exists()
