"""Keep a project's Cognee dataset in step with its notes. Never on the prompt path.

Every write goes through an on-disk queue (JSONL in the project's data folder): a change to the
notes becomes `add` and `forget` operations appended to the queue, and a replay sends them to
Cognee. A replay that fails leaves the queue as it was, to be replayed later (the next sync,
the next session end); every operation is idempotent, so replaying twice is harmless.

Cognee names an item added as text by the md5 of its content ("text_<md5>"), so an edited
note is a new item: the old one is retired by its data id (`POST /api/v1/forget`) and the new
one added. The sync state maps each note's key to the hash of the text sent and its data id,
which also lets the store show a note's id and date beside a Cognee result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memsift.fsutil import atomic_write, file_lock
from memsift.longterm.base import LongTermError
from memsift.longterm.cognee import CogneeClient
from memsift.longterm.dataset import (
    ADD_BATCH,
    VECTOR_CACHE_NAME,
    content_md5,
    dataset_name,
    queue_path,
    state_path,
)

NOTES_CHANGED_TIMEOUT_S = 10.0  # session end waits on nobody, but should not hang for long

Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class SyncReport:
    added: int = 0
    forgotten: int = 0
    pending: int = 0  # operations still queued (after a failure)
    error: str = ""
    cognify_started: bool = False

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass
class SyncState:
    dataset: str = ""
    url: str = ""
    notes: dict[str, dict] = field(default_factory=dict)  # key -> {hash, data_id, written}

    @classmethod
    def load(cls, path: Path) -> SyncState:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        return cls(raw.get("dataset", ""), raw.get("url", ""), dict(raw.get("notes", {})))

    def save(self, path: Path) -> None:
        data = {"dataset": self.dataset, "url": self.url, "notes": self.notes}
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True))


# --- the queue ----------------------------------------------------------------------------------


def read_queue(path: Path) -> list[dict]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    ops = []
    for line in lines:
        try:
            ops.append(json.loads(line))
        except ValueError:
            continue  # a torn line from a crash: the next diff re-queues what it meant
    return ops


def write_queue(path: Path, ops: list[dict]) -> None:
    atomic_write(path, "".join(json.dumps(op, sort_keys=True) + "\n" for op in ops))


def projected(state: SyncState, ops: list[dict]) -> dict[str, str]:
    """key -> hash as the dataset will be once the queue is replayed."""
    notes = {key: entry["hash"] for key, entry in state.notes.items()}
    for op in ops:
        if op["op"] == "add":
            notes[op["key"]] = op["hash"]
        elif op["op"] == "forget" and notes.get(op["key"]) == op["hash"]:
            notes.pop(op["key"])
    return notes


def diff_ops(notes, current: dict[str, str]) -> list[dict]:
    """The operations that turn `current` (key -> hash) into the notes."""
    ops: list[dict] = []
    wanted = {}
    for note in notes:
        wanted[note.key] = note
    for key, old_hash in current.items():
        note = wanted.get(key)
        if note is None or content_md5(note.text) != old_hash:
            ops.append({"op": "forget", "key": key, "hash": old_hash})
    for key, note in wanted.items():
        digest = content_md5(note.text)
        if current.get(key) != digest:
            ops.append({"op": "add", "key": key, "hash": digest, "text": note.text,
                        "written": note.written})
    return ops


# --- replay -------------------------------------------------------------------------------------


def _collapse(ops: list[dict]) -> tuple[dict[str, dict], list[dict]]:
    """The last add per key, and every forget (an old hash must go even if re-added later)."""
    adds: dict[str, dict] = {}
    forgets: list[dict] = []
    for op in ops:
        if op["op"] == "add":
            adds[op["key"]] = op
        elif op["op"] == "forget":
            forgets.append(op)
            if op["key"] in adds and adds[op["key"]]["hash"] == op["hash"]:
                adds.pop(op["key"])
    return adds, forgets


def _upload(client, dataset: str, adds: list[dict], progress: Progress | None) -> None:
    total = len(adds)
    for start in range(0, total, ADD_BATCH):
        batch = adds[start:start + ADD_BATCH]
        client.add_texts(dataset, [op["text"] for op in batch])
        if progress:
            progress(min(start + ADD_BATCH, total), total)


def _data_ids(client, dataset_id: str) -> dict[str, str]:
    """md5 -> data id, read from the dataset's item names."""
    ids = {}
    for item in client.dataset_data(dataset_id):
        name = str(item.get("name", ""))
        if name.startswith("text_"):
            ids[name[len("text_"):]] = str(item.get("id"))
    return ids


def apply_ops(client, dataset: str, state: SyncState, ops: list[dict],
              progress: Progress | None = None) -> SyncReport:
    """Send the operations; state is updated only once the server has them all."""
    adds, forgets = _collapse(ops)
    dataset_id = client.create_dataset(dataset)
    _upload(client, dataset, list(adds.values()), progress)
    ids = _data_ids(client, dataset_id) if (adds or forgets) else {}
    for key, op in adds.items():
        state.notes[key] = {"hash": op["hash"], "data_id": ids.get(op["hash"], ""),
                            "written": op.get("written", "")}
    for op in forgets:
        if state.notes.get(op["key"], {}).get("hash") == op["hash"]:
            state.notes.pop(op["key"])
    in_use = {entry["hash"] for entry in state.notes.values()}
    forgotten = 0
    for digest in {op["hash"] for op in forgets} - in_use:  # two notes, one text: keep it
        if digest in ids:
            client.forget(dataset, ids[digest])
            forgotten += 1
    report = SyncReport(added=len(adds), forgotten=forgotten)
    if adds or forgotten:
        client.cognify(dataset, background=True)
        report.cognify_started = True
    return report


# --- the front door -----------------------------------------------------------------------------


def _configured(settings) -> bool:
    return bool(settings["cognee.url"])


def _client(settings, timeout_s: float | None):

    if timeout_s is None:
        return CogneeClient(settings["cognee.url"], settings["cognee.api_key"])
    return CogneeClient(settings["cognee.url"], settings["cognee.api_key"], timeout_s=timeout_s)


def _build_vectors(settings, project_root) -> None:
    """Cache the vectors of the notes as they now are, so the judge scores Cognee's results
    without embedding them on the prompt path (the whole set: a build keeps only these)."""
    from memsift.memory.notes import NotesFile, notes_path
    from memsift.model.vectors import VectorCache

    texts = [n.text for n in NotesFile(notes_path(settings, project_root)).read()]
    if texts:
        VectorCache(state_path(settings, project_root).parent, VECTOR_CACHE_NAME).build(texts)


def _lock(settings, project_root):
    return file_lock(queue_path(settings, project_root).with_suffix(".lock"), timeout=30.0)


def enqueue_changes(project_root, settings) -> int:
    """Diff the notes against the dataset (as the queue will leave it); queue the difference."""
    from memsift.memory.notes import NotesFile, notes_path

    notes = NotesFile(notes_path(settings, project_root)).read()
    spath, qpath = state_path(settings, project_root), queue_path(settings, project_root)
    with _lock(settings, project_root):
        state = SyncState.load(spath)
        dataset = dataset_name(settings, project_root)
        if (state.dataset, state.url) != (dataset, settings["cognee.url"]):
            state = SyncState(dataset, settings["cognee.url"])  # another server: start afresh
            state.save(spath)
            write_queue(qpath, [])
        queued = read_queue(qpath)
        ops = diff_ops(notes, projected(state, queued))
        if ops:
            write_queue(qpath, queued + ops)
        return len(ops)


def replay(project_root, settings, progress: Progress | None = None,
           timeout_s: float | None = None) -> SyncReport:
    """Send the queued operations. On failure the queue stays for the next replay."""

    spath, qpath = state_path(settings, project_root), queue_path(settings, project_root)
    with _lock(settings, project_root):
        ops = read_queue(qpath)
        if not ops:
            return SyncReport()
        state = SyncState.load(spath)
        client = _client(settings, timeout_s)
        try:
            report = apply_ops(client, dataset_name(settings, project_root), state, ops,
                               progress)
        except LongTermError as exc:
            return SyncReport(pending=len(ops), error=f"{exc.reason}: {exc}")
        finally:
            client.close()
        state.save(spath)
        write_queue(qpath, [])
    _build_vectors(settings, project_root)
    return report


def sync_project(project_root, settings, progress: Progress | None = None) -> SyncReport:
    """Queue what changed in the project's notes and send the queue (`memsift sync`)."""
    if not _configured(settings):
        return SyncReport(error="no Cognee server configured (cognee.url)")
    enqueue_changes(project_root, settings)
    return replay(project_root, settings, progress)


def notes_changed(project_root, settings) -> SyncReport:
    """Called after the notes were written (session end): queue, then try to send, briefly.
    Never raises: a failed send stays queued."""
    if not _configured(settings):
        return SyncReport()
    try:
        enqueue_changes(project_root, settings)
        return replay(project_root, settings, timeout_s=NOTES_CHANGED_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001  session end must go on whatever happens here
        from memsift.log import log

        log("warning", "cognee sync failed, changes stay queued", error=str(exc))
        return SyncReport(error=str(exc))
