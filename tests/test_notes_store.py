"""Local notes under parallel writers, cached note vectors, the embedded long-term store."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import numpy as np
import pytest
from fakes.memory import WORD_MODEL_ID, bag_embed

from memsift.clock import Deadline
from memsift.longterm.base import LongTermError, Passage
from memsift.longterm.local import LocalStore
from memsift.memory.notes import Note, NotesFile
from memsift.model.vectors import VectorCache

WRITERS = 4
NOTES_EACH = 25


def _writer(path: str, writer: int) -> None:
    notes = NotesFile(Path(path))
    for n in range(NOTES_EACH):
        notes.append([Note(f"writer {writer} note {n} about the release", id=f"w{writer}n{n}")])


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_parallel_writer_processes_lose_no_line(tmp_path):
    path = tmp_path / "notes.md"
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_writer, args=(str(path), w)) for w in range(WRITERS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    ids = sorted(n.id for n in NotesFile(path).read())
    assert ids == sorted(f"w{w}n{n}" for w in range(WRITERS) for n in range(NOTES_EACH))


class CountingEmbed:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts):
        self.seen.extend(texts)
        return bag_embed(texts)


def test_note_vectors_are_cached_and_only_changed_notes_are_embedded(tmp_path):
    embed = CountingEmbed()
    cache = VectorCache(tmp_path, "notes", embed, WORD_MODEL_ID)
    texts = [f"note number {i} on topic {i % 7}" for i in range(50)]
    first, present = cache.vectors(texts)
    assert present.all() and len(embed.seen) == 50
    again, _ = VectorCache(tmp_path, "notes", embed, WORD_MODEL_ID).vectors(texts)
    assert len(embed.seen) == 50 and np.allclose(first, again)
    changed = texts[:49] + ["a brand new note"]
    VectorCache(tmp_path, "notes", embed, WORD_MODEL_ID).vectors(changed)
    assert embed.seen[50:] == ["a brand new note"]
    assert len(list(tmp_path.glob("notes.*.npy"))) == 1  # the old generation is gone


def test_vectors_of_another_model_are_never_reused(tmp_path):
    embed = CountingEmbed()
    VectorCache(tmp_path, "notes", embed, "model-a").vectors(["one note"])
    VectorCache(tmp_path, "notes", embed, "model-b").vectors(["one note"])
    assert embed.seen == ["one note", "one note"]


def test_an_expired_deadline_leaves_unembedded_notes_out_but_keeps_cached_ones(tmp_path):
    embed = CountingEmbed()
    VectorCache(tmp_path, "notes", embed, WORD_MODEL_ID).vectors(["cached note"])
    spent = Deadline(0.0)
    _, present = VectorCache(tmp_path, "notes", embed, WORD_MODEL_ID).vectors(
        ["cached note", "new note"], spent)
    assert present.tolist() == [True, False]


def _store(tmp_path) -> LocalStore:
    return LocalStore(tmp_path / "lt", bag_embed, WORD_MODEL_ID)


def test_the_local_store_finds_the_nearest_passages(tmp_path):
    store = _store(tmp_path)
    added = store.add([Passage("a", "postgres advisory locks for the settlement job"),
                       Passage("b", "the mobile app release checklist"),
                       Passage("c", "webhook signatures are verified with hmac")])
    assert added == 3 and store.count() == 3
    hits = store.search("which locks does the settlement job use", 2, Deadline(5.0))
    assert hits[0].id == "a" and len(hits) == 2
    assert 0.0 < hits[0].similarity <= 1.0


def test_the_local_store_is_idempotent_by_id_and_removes(tmp_path):
    store = _store(tmp_path)
    store.add([Passage("a", "one"), Passage("b", "two")])
    assert store.add([Passage("a", "one again"), Passage("c", "three")]) == 1
    assert store.remove(["a", "zz"]) == 1
    assert sorted(p.id for p in _store(tmp_path).passages()) == ["b", "c"]


def test_the_local_store_skips_a_corrupt_line(tmp_path):
    store = _store(tmp_path)
    store.add([Passage("a", "alpha passage"), Passage("b", "beta passage")])
    with open(store.path, "a") as handle:
        handle.write("{not json\n")
    assert store.count() == 2


def test_a_search_past_its_deadline_is_a_timeout(tmp_path):
    store = _store(tmp_path)
    store.add([Passage("a", "alpha passage")])
    with pytest.raises(LongTermError) as caught:
        store.search("alpha", 1, Deadline(0.0))
    assert caught.value.reason == "timeout"


def test_parsed_notes_are_reused_until_the_file_changes(tmp_path):
    from memsift.memory.notes_cache import read_notes
    from memsift.model.vectors import text_hash

    path = tmp_path / "notes.md"
    NotesFile(path).append([Note("first note", id="a")])
    notes, hashes = read_notes(path)
    assert [n.id for n in notes] == ["a"] and hashes == [text_hash("first note")]
    sidecar = path.with_name("notes.md.parsed.json")
    assert sidecar.exists()
    NotesFile(path).append([Note("second note", id="b")])
    notes, hashes = read_notes(path)
    assert [n.id for n in notes] == ["a", "b"] and len(hashes) == 2
    assert read_notes(tmp_path / "absent.md") == ([], [])
