"""Cached embedding vectors of texts (notes, long-term passages), so the prompt path reads a
matrix instead of running the model over every note.

A cache is a folder entry `<name>.json` (the index: model id, one text hash per row, the
matrix file's name) and `<name>.<generation>.npy` (float32 rows, L2-normalised). A rebuild
embeds only texts whose hash is not cached yet, writes a new generation, then swaps the index
atomically: a reader sees the old pair or the new pair, never a mix. Vectors made by another
model are never reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memsift.clock import Deadline
from memsift.fsutil import atomic_write, file_lock
from memsift.texthash import text_hash

EmbedFn = Callable[[Sequence[str]], np.ndarray]
EMBED_BATCH = 32  # texts per model call: small enough to stop close to a deadline


def default_embed() -> tuple[EmbedFn, str]:
    from memsift.model import embed
    return embed.embed, embed.MODEL_ID


class VectorCache:
    """Vectors of a set of texts, kept beside the data they belong to."""

    def __init__(self, folder: Path, name: str, embed_fn: EmbedFn | None = None,
                 model_id: str | None = None) -> None:
        if embed_fn is None or model_id is None:
            default_fn, default_id = default_embed()
            embed_fn = embed_fn or default_fn
            model_id = model_id or default_id
        self.folder = folder
        self.name = name
        self.embed_fn = embed_fn
        self.model_id = model_id
        self.index_path = folder / f"{name}.json"
        self.lock_path = folder / f"{name}.vectors.lock"

    def _load(self) -> tuple[list[str], np.ndarray | None]:
        """The cached hashes and matrix; empty when absent, stale or from another model."""
        try:
            index = json.loads(self.index_path.read_text(encoding="utf-8"))
            if index.get("model") != self.model_id:
                return [], None
            matrix = np.load(self.folder / index["matrix"], mmap_mode="r")
        except (OSError, ValueError, KeyError, TypeError):
            return [], None
        hashes = list(index.get("hashes", []))
        if matrix.ndim != 2 or matrix.shape[0] != len(hashes):
            return [], None
        return hashes, matrix

    def vectors(self, texts: Sequence[str], deadline: Deadline | None = None,
                hashes: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(matrix, present): one row per text, `present[i]` False where the text had no
        vector and the deadline left no time to embed it (that row is zeros). `hashes`: the
        texts' text_hash values when the caller has them already."""
        wanted = list(hashes) if hashes is not None else [text_hash(t) for t in texts]
        hashes, matrix = self._load()
        rows = {h: i for i, h in enumerate(hashes)}
        missing = [i for i, h in enumerate(wanted) if h not in rows]
        if not missing and matrix is not None:
            order = np.fromiter((rows[h] for h in wanted), dtype=np.int64, count=len(wanted))
            return np.asarray(matrix[order], dtype=np.float32), np.ones(len(texts), bool)
        fresh = self._embed_missing([texts[i] for i in missing], deadline)
        out, present = self._assemble(wanted, rows, matrix, missing, fresh)
        if fresh:
            self._save(wanted, out, present)
        return out, present

    def _embed_missing(self, texts: list[str], deadline: Deadline | None) -> list[np.ndarray]:
        """Embed in batches while the deadline allows; returns the batches done."""
        done: list[np.ndarray] = []
        for start in range(0, len(texts), EMBED_BATCH):
            if deadline is not None and deadline.expired():
                break
            done.append(np.asarray(self.embed_fn(texts[start:start + EMBED_BATCH]), np.float32))
        return done

    def _assemble(self, wanted, rows, matrix, missing, fresh) -> tuple[np.ndarray, np.ndarray]:
        dim = fresh[0].shape[1] if fresh else (matrix.shape[1] if matrix is not None else 1)
        out = np.zeros((len(wanted), dim), dtype=np.float32)
        present = np.zeros(len(wanted), dtype=bool)
        for i, h in enumerate(wanted):
            if h in rows and matrix is not None:
                out[i] = matrix[rows[h]]
                present[i] = True
        new_rows = np.concatenate(fresh) if fresh else np.zeros((0, dim), np.float32)
        for row, i in zip(new_rows, missing):
            out[i] = row
            present[i] = True
        return out, present

    def _save(self, hashes: list[str], matrix: np.ndarray, present: np.ndarray) -> None:
        """Write a new generation of the rows we have, then swap the index to it."""
        keep = [h for h, ok in zip(hashes, present) if ok]
        rows = matrix[present]
        with file_lock(self.lock_path):
            old = self._index_matrix_name()
            name = f"{self.name}.{uuid.uuid4().hex[:12]}.npy"
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = self.folder / f".{name}.tmp"
            with open(tmp, "wb") as handle:
                np.save(handle, np.ascontiguousarray(rows, dtype=np.float32))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.folder / name)
            index = {"model": self.model_id, "matrix": name, "hashes": keep}
            atomic_write(self.index_path, json.dumps(index))
            if old and old != name:
                with contextlib.suppress(OSError):
                    (self.folder / old).unlink()

    def _index_matrix_name(self) -> str:
        try:
            return str(json.loads(self.index_path.read_text(encoding="utf-8"))["matrix"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""

    def build(self, texts: Sequence[str]) -> int:
        """Embed every text not cached yet (import, CLI); returns how many were embedded."""
        hashes, _ = self._load()
        known = set(hashes)
        missing = sum(1 for t in texts if text_hash(t) not in known)
        self.vectors(texts)
        return missing
