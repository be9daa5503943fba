"""The parsed notes of a file, kept beside it while the file is unchanged: with 10,000 notes,
parsing every line on every prompt costs more than the rest of the notes step together."""

from __future__ import annotations

import json
from pathlib import Path

from memsift.fsutil import atomic_write
from memsift.memory.notes import Note, NotesFile
from memsift.texthash import text_hash

CACHE_VERSION = 1


def _signature(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".parsed.json")


def _from_cache(path: Path, signature: list[int]) -> tuple[list[Note], list[str]] | None:
    try:
        data = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        if data.get("v") != CACHE_VERSION or data.get("sig") != signature:
            return None
        notes = [Note(text=t, id=i, written=w, meta=m, line=n) for t, i, w, m, n in data["notes"]]
        return notes, list(data["hashes"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_notes(path: Path) -> tuple[list[Note], list[str]]:
    """(notes, their text hashes), parsed once per change of the file."""
    signature = _signature(path)
    if signature is None:
        return [], []
    cached = _from_cache(path, signature)
    if cached is not None:
        return cached
    notes = NotesFile(path).read()
    hashes = [text_hash(n.text) for n in notes]
    rows = [[n.text, n.id, n.written, dict(n.meta), n.line] for n in notes]
    try:  # a stale signature (written meanwhile) only means a parse next time
        atomic_write(_sidecar(path), json.dumps({"v": CACHE_VERSION, "sig": signature,
                                                 "notes": rows, "hashes": hashes}))
    except OSError:
        pass
    return notes, hashes
