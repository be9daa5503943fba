"""Weights cached as float32 in the user's cache folder and mmapped by every later process.

The embedding model (embed.py, from its int8 ONNX file) and the cross-encoders (cross.py, from
their fp16 npz files) both pay once to read and convert their weights, then open the cache:
one `weights.npy` blob with an index of name -> (offset, shape) in `meta.json`, beside the
source file's size, mtime and sha256. `meta.json` is written last, so a cache without it is
unfinished and gets rebuilt; the source is hashed again only when its size or mtime moved.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

WEIGHTS = "weights.npy"
META = "meta.json"

Index = dict[str, tuple[int, list[int]]]


def pack(arrays: Mapping[str, np.ndarray]) -> tuple[np.ndarray, Index]:
    """One float32 blob of the arrays, and where each lies in it."""
    index: Index = {}
    blob, offset = [], 0
    for name, array in arrays.items():
        flat = np.ascontiguousarray(array, dtype=np.float32).ravel()
        index[name] = (offset, list(array.shape))
        blob.append(flat)
        offset += flat.size
    return np.concatenate(blob), index


def unpack(cache: Path, index: Mapping[str, tuple[int, list[int]]]) -> dict[str, np.ndarray]:
    """The arrays as views of the mapped blob."""
    floats = open_npy(cache / WEIGHTS)
    out = {}
    for name, (offset, shape) in index.items():
        size = int(np.prod(shape)) if shape else 1
        out[name] = floats[offset:offset + size].reshape(shape)
    return out


def open_npy(path: Path) -> np.ndarray:
    # A plain ndarray view of the map: numpy's memmap subclass slows every operation on it.
    return np.asarray(np.load(path, mmap_mode="r"))


def read_meta(cache: Path) -> dict | None:
    try:
        meta = json.loads((cache / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def stamp(source: Path, prefix: str = "", sha256: str | None = None) -> dict:
    """The source's size, mtime and sha256, under `prefix`-ed keys."""
    stat = source.stat()
    return {f"{prefix}sha256": sha256 or file_sha256(source), f"{prefix}size": stat.st_size,
            f"{prefix}mtime_ns": stat.st_mtime_ns}


def unchanged(meta: Mapping, source: Path, prefix: str = "") -> bool:
    """The source has the bytes the cache was made from. OSError when it cannot be read."""
    stat = source.stat()
    if (meta.get(f"{prefix}size") == stat.st_size
            and meta.get(f"{prefix}mtime_ns") == stat.st_mtime_ns):
        return True
    return meta.get(f"{prefix}sha256") == file_sha256(source)


def write(cache: Path, meta: Mapping, arrays: Mapping[str, np.ndarray]) -> None:
    """Each array as `<name>` (an .npy file name) in `cache`, then meta.json last."""
    from memsift.fsutil import atomic_write

    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    (cache / META).unlink(missing_ok=True)
    for name, array in arrays.items():
        save_npy(cache / name, array)
    atomic_write(cache / META, json.dumps(meta))


def file_sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_npy(path: Path, array: np.ndarray) -> None:
    import tempfile  # only when a cache is built: keeps it off a fresh process's imports

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, array)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
