"""Previous versions of a notes file, so every change can be undone to the exact bytes.

Before the notes file is replaced (NotesFile.write_locked, under the notes lock) its current
bytes are copied into `versions/` beside it, atomically, as `<seq>-<time>.md`; a file that did
not exist yet is recorded as `<seq>-<time>.absent`. `undo` puts the newest version back and
takes it off the list (what it replaced goes to `versions/undone/`, never lost).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memsift.clock import now
from memsift.fsutil import atomic_write, file_lock

MAX_VERSIONS = 200  # about a year of sessions; older versions are pruned oldest first
_NAME = re.compile(r"^(?P<seq>\d{6,})-(?P<stamp>[0-9TZ]+)\.(?P<kind>md|absent)$")


@dataclass(frozen=True)
class Version:
    path: Path
    seq: int
    stamp: str  # UTC, compact ISO: 20240612T103107Z
    absent: bool  # the notes file did not exist before this change

    def read_bytes(self) -> bytes:
        return b"" if self.absent else self.path.read_bytes()


def versions_dir(notes_path: Path) -> Path:
    return notes_path.parent / "versions"


def versions(notes_path: Path) -> list[Version]:
    """Oldest first."""
    folder = versions_dir(notes_path)
    found = []
    for entry in folder.iterdir() if folder.is_dir() else ():
        match = _NAME.match(entry.name)
        if match:
            found.append(Version(entry, int(match["seq"]), match["stamp"],
                                 match["kind"] == "absent"))
    return sorted(found, key=lambda v: v.seq)


def keep_version(notes_path: Path) -> Version:
    """Copy the current bytes of notes_path into the history; the caller holds the lock."""
    existing = versions(notes_path)
    seq = existing[-1].seq + 1 if existing else 1
    stamp = now().strftime("%Y%m%dT%H%M%SZ")
    try:
        data: bytes | None = notes_path.read_bytes()
    except FileNotFoundError:
        data = None
    kind = "absent" if data is None else "md"
    target = versions_dir(notes_path) / f"{seq:06d}-{stamp}.{kind}"
    atomic_write(target, data or b"")
    for old in existing[: max(0, len(existing) + 1 - MAX_VERSIONS)]:
        old.path.unlink(missing_ok=True)
    return Version(target, seq, stamp, data is None)


class NothingToUndo(Exception):
    """The notes file has no earlier version."""


def undo(notes_path: Path) -> Version:
    """Restore the newest earlier version byte for byte; returns the version restored."""
    with file_lock(notes_path.with_name(notes_path.name + ".lock")):
        history = versions(notes_path)
        if not history:
            raise NothingToUndo(f"no earlier version of {notes_path}")
        last = history[-1]
        _set_aside(notes_path, last)
        if last.absent:
            notes_path.unlink(missing_ok=True)
        else:
            atomic_write(notes_path, last.read_bytes())
        last.path.unlink()
        return last


def _set_aside(notes_path: Path, replacing: Version) -> None:
    """What undo replaces is kept too, in versions/undone/, in case undo was a mistake."""
    try:
        current = notes_path.read_bytes()
    except FileNotFoundError:
        return
    stamp = now().strftime("%Y%m%dT%H%M%SZ")
    atomic_write(versions_dir(notes_path) / "undone" / f"{replacing.seq:06d}-{stamp}.md", current)
