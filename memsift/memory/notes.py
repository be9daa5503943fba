"""Local notes: one plain-text file per project, one note per line (notes/FORMAT.md).

    - Staging model names use a double underscore. <!-- memsift id=n03 written=2024-06-12 -->

A line that starts with "- " is a note; its trailing HTML comment carries metadata, invisible
when the file is rendered as Markdown and optional when a person writes a note by hand. Every
other line (headings, blank lines, prose) is kept byte for byte and never read as a note.
Writes are atomic and under a lock, so concurrent sessions never lose each other's lines.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memsift.fsutil import atomic_write, file_lock

NOTE_PREFIX = "- "
_META_RE = re.compile(r"\s*<!--\s*memsift\s+(?P<meta>[^>]*?)\s*-->\s*$")
_PAIR_RE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


@dataclass(frozen=True)
class Note:
    text: str
    id: str = ""
    written: str = ""  # ISO date
    meta: Mapping[str, str] = field(default_factory=dict, compare=False)
    line: int = 0  # 1-based line number in the file it was read from

    @property
    def key(self) -> str:
        return self.id or text_id(self.text)


def text_id(text: str) -> str:
    return "h" + hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:10]


def _quote(value: str) -> str:
    if value and re.fullmatch(r"[^\s\"=<>]+", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def format_note(note: Note) -> str:
    """One line for the notes file; newlines inside the text are folded to spaces."""
    text = " ".join(note.text.split())
    meta = {"id": note.id or text_id(text)}
    if note.written:
        meta["written"] = note.written
    meta.update({k: str(v) for k, v in note.meta.items() if k not in {"id", "written"}})
    pairs = " ".join(f"{k}={_quote(v)}" for k, v in meta.items())
    return f"{NOTE_PREFIX}{text} <!-- memsift {pairs} -->"


def parse_line(line: str, number: int = 0) -> Note | None:
    if not line.startswith(NOTE_PREFIX):
        return None
    body = line[len(NOTE_PREFIX):].rstrip("\r\n")
    meta: dict[str, str] = {}
    match = _META_RE.search(body)
    if match:
        meta = {k: _unquote(v) for k, v in _PAIR_RE.findall(match.group("meta"))}
        body = body[: match.start()]
    text = body.strip()
    if not text:
        return None
    note_id = meta.pop("id", "")
    written = meta.pop("written", "")
    return Note(text=text, id=note_id, written=written, meta=meta, line=number)


def parse(content: str) -> list[Note]:
    notes = []
    for number, line in enumerate(content.splitlines(), start=1):
        note = parse_line(line, number)
        if note is not None:
            notes.append(note)
    return notes


HEADER = "# memsift notes\n\n"


class NotesFile:
    """The notes of one project."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    def read_text(self) -> str:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            keep_aside(self.path, data)  # its exact bytes, before anything is written back
            return data.decode("utf-8", errors="replace")

    def read(self) -> list[Note]:
        return parse(self.read_text())

    def append(self, notes: Iterable[Note]) -> list[Note]:
        """Append notes whose text is not already there; returns those written."""
        with file_lock(self.lock_path):
            content = self.read_text()
            present = {text_id(n.text) for n in parse(content)}
            fresh = []
            for note in notes:
                if text_id(note.text) not in present:
                    present.add(text_id(note.text))
                    fresh.append(note)
            if fresh:
                if not content:
                    content = HEADER
                elif not content.endswith("\n"):
                    content += "\n"
                content += "".join(format_note(n) + "\n" for n in fresh)
                self.write_locked(content)
            return fresh

    def write_locked(self, content: str) -> None:
        """Replace the whole file; the caller holds the lock. The one place notes are
        written, so history and sync hooks attach here."""
        from memsift.memory.history import keep_version

        keep_version(self.path)  # the bytes being replaced, for `memsift notes undo`
        atomic_write(self.path, content)


CORRUPT_SUFFIX = ".corrupt-"


def keep_aside(path: Path, data: bytes) -> Path:
    """A notes file that is not UTF-8 (a bad edit, a crash mid-write): its exact bytes are
    copied beside it as `notes.md.corrupt-<time>` (once per content, never overwriting a
    file), so the readable notes keep working and nothing the user wrote is lost."""
    for existing in sorted(path.parent.glob(path.name + CORRUPT_SUFFIX + "*")):
        try:
            if existing.read_bytes() == data:
                return existing
        except OSError:
            continue
    from memsift.clock import now
    from memsift.log import log

    stamp = now().strftime("%Y%m%dT%H%M%SZ")
    for n in range(100):
        target = path.with_name(f"{path.name}{CORRUPT_SUFFIX}{stamp}" + (f"-{n}" if n else ""))
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        log("warning", "notes file is not UTF-8: a copy is kept aside, unreadable bytes "
            "are read as U+FFFD", path=str(path), copy=str(target))
        return target
    raise OSError(f"no free name to keep {path} aside")


def notes_path(settings, project_root) -> Path:
    return settings.paths.project_dir(project_root) / "notes.md"
