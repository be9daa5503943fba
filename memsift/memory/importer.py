"""Filling a project's memory outside the prompt path: a benchmark file's notes into the
notes, its passages into the long-term store (the `import` command, benchmarks, tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memsift.longterm.base import Passage
from memsift.memory.notes import Note, NotesFile, notes_path


class BenchFileError(ValueError):
    """The file is not a benchmark file memsift can import."""


@dataclass
class Imported:
    notes: int
    passages: int
    notes_total: int
    passages_total: int


def load_bench_file(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BenchFileError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or not ({"notes", "memory"} & data.keys()):
        raise BenchFileError(f"{path}: no `notes` or `memory` list")
    return data


def import_data(data: dict, settings, project_root, store=None) -> Imported:
    """The file's notes into the project's notes (ids and dates kept), its memory into the
    long-term store; vectors are built now so the first prompt does not pay for them."""
    from memsift.longterm import get_store
    from memsift.model.vectors import VectorCache

    notes = [Note(text=n["text"], id=str(n.get("id", "")), written=str(n.get("written", "")))
             for n in data.get("notes") or []]
    notes_file = NotesFile(notes_path(settings, project_root))
    written = notes_file.append(notes)
    from memsift.memory.notes_cache import read_notes

    all_notes, _ = read_notes(notes_file.path)  # also leaves the parsed notes for the hook
    if all_notes:
        VectorCache(notes_file.path.parent, "notes").build([n.text for n in all_notes])
    store = store or get_store(settings, project_root)
    passages = [Passage(id=str(m["id"]), text=m["text"], written=str(m.get("written", "")),
                        source="import") for m in data.get("memory") or []]
    added = store.add(passages) if passages else 0
    return Imported(len(written), added, len(all_notes), store.count())
