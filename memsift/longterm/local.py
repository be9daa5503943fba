"""The embedded long-term store: passages in a JSONL file, their vectors in a cached .npy,
all in the project's data folder. Used when no Cognee server is configured, so memsift works
with no server at all. Same interface as the Cognee backend (memsift.longterm.base).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from memsift.clock import Deadline
from memsift.fsutil import atomic_write, file_lock
from memsift.longterm.base import LongTermError, Passage
from memsift.model.lexical import rerank
from memsift.model.vectors import EmbedFn, VectorCache

STORE_DIR = "longterm"
PASSAGES_FILE = "passages.jsonl"


def _passage_from(data: dict) -> Passage:
    return Passage(id=str(data["id"]), text=str(data["text"]), written=str(data.get("written", "")),
                   source=str(data.get("source", "")), meta=dict(data.get("meta") or {}))


def _passage_line(passage: Passage) -> str:
    data = asdict(passage)
    data.pop("similarity", None)
    return json.dumps(data, ensure_ascii=False)


class LocalStore:
    """Passages of one project; every write is atomic and under the store's lock."""

    name = "embedded"

    def __init__(self, folder: Path, embed_fn: EmbedFn | None = None,
                 model_id: str | None = None) -> None:
        self.folder = folder
        self.path = folder / PASSAGES_FILE
        self.lock_path = folder / (PASSAGES_FILE + ".lock")
        self._embed_fn = embed_fn
        self._model_id = model_id
        self._vectors: VectorCache | None = None

    @classmethod
    def for_project(cls, settings, project_root, embed_fn: EmbedFn | None = None,
                    model_id: str | None = None) -> LocalStore:
        return cls(settings.paths.project_dir(project_root) / STORE_DIR, embed_fn, model_id)

    @property
    def vectors(self) -> VectorCache:
        if self._vectors is None:
            self._vectors = VectorCache(self.folder, "passages", self._embed_fn, self._model_id)
        return self._vectors

    def passages(self) -> list[Passage]:
        """All stored passages; a corrupt line is skipped, never fatal."""
        try:
            content = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise LongTermError(f"cannot read {self.path}: {exc}") from exc
        out = []
        for line in content.splitlines():
            try:
                out.append(_passage_from(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                continue
        return out

    @property
    def model_id(self) -> str:
        return self.vectors.model_id

    def search(self, query: str, top_k: int, deadline: Deadline) -> list[Passage]:
        try:
            query_vector = np.asarray(self.vectors.embed_fn([query]), np.float32)[0]
        except Exception as exc:  # the model is foreign code: one error type out
            raise LongTermError(f"embedded search failed: {exc}") from exc
        return self.search_vector(query_vector, top_k, deadline, text=query)

    def search_vector(self, query_vector: np.ndarray, top_k: int,
                      deadline: Deadline, text: str = "") -> list[Passage]:
        """search() for a caller that holds the query's vector (same model_id). Each passage
        carries its own vector in meta["vector"], so a judge need not embed it again. With
        the query's `text`, the nearest passages are reordered by the rare words they share
        with it (memsift.model.lexical); `similarity` stays the cosine."""
        passages = self.passages()
        if not passages or top_k <= 0:
            return []
        try:
            texts = [p.text for p in passages]
            matrix, present = self.vectors.vectors(texts, deadline)
        except Exception as exc:
            raise LongTermError(f"embedded search failed: {exc}") from exc
        if deadline.expired():
            raise LongTermError("embedded search ran out of time", reason="timeout")
        scores = np.where(present, matrix @ np.asarray(query_vector, np.float32), -1.0)
        order = rerank(text, texts, scores, top_k, present)
        return [_found(passages[i], float(scores[i]), matrix[i]) for i in order]

    def add(self, passages: Iterable[Passage]) -> int:
        items = list(passages)
        with file_lock(self.lock_path):
            current = self.passages()
            known = {p.id for p in current}
            fresh = [p for p in items if p.id not in known and not known.add(p.id)]
            if fresh:
                lines = [_passage_line(p) for p in current + fresh]
                atomic_write(self.path, "\n".join(lines) + "\n")
        if fresh:
            self.vectors.build([p.text for p in current + fresh])
        return len(fresh)

    def remove(self, ids: Iterable[str]) -> int:
        gone = set(ids)
        with file_lock(self.lock_path):
            current = self.passages()
            kept = [p for p in current if p.id not in gone]
            if len(kept) != len(current):
                atomic_write(self.path, "".join(_passage_line(p) + "\n" for p in kept))
        return len(current) - len(kept)

    def count(self) -> int:
        return len(self.passages())


def _found(passage: Passage, cosine: float, vector: np.ndarray) -> Passage:
    similarity = max(0.0, min(1.0, cosine))
    return Passage(passage.id, passage.text, passage.written, passage.source or "longterm",
                   similarity, {**passage.meta, "vector": np.array(vector, np.float32)})
