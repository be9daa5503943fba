"""The session's last open work, as one WIP note for the next session.

Status is not a note, except this once: what a session left open when it ended ("still
needs Maya's approval", "next: the retry test") is what the next session on the same branch
asks first. One WIP note per branch or task (meta wip=<branch>): a new one supersedes the
previous one, which leaves the prompt path and stays in the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from memsift.clock import now
from memsift.fsutil import file_lock
from memsift.memory.notes import Note, NotesFile, text_id

LAST_EXCHANGES = 4  # open work is said at the end of a session, not in its middle
MAX_WIP_CHARS = 300  # a note's length, as every other note
_OPEN = re.compile(
    r"(?i)\b(?:still (?:needs?|to do|missing|open|waiting|has to)|left (?:before|to do|to)|"
    r"next(?: step| up)?:|next (?:is|comes|session)|not (?:done|finished|started|merged) yet|"
    r"todo|to-do|remaining|tomorrow|pick (?:it|this|that) up|blocked (?:on|by)|"
    r"waiting (?:for|on)|missing:|open:|wip\b|unfinished|half[- ]done|what's left)")
_BRANCH = re.compile(r"\b(?:feat|feature|fix|bugfix|hotfix|chore|release|wip|refactor)/"
                     r"[\w.\-/]+[\w]")
MAIN_BRANCHES = ("main", "master", "trunk", "develop")
DEFAULT_TASK = "project"  # no branch anywhere: the project's one line of work


def git_branch(root: Path) -> str:
    """The checked-out branch, read from .git/HEAD (no git process); "" when detached or
    not a repository."""
    try:
        head = (Path(root) / ".git" / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return ""
    prefix = "ref: refs/heads/"
    return head[len(prefix):] if head.startswith(prefix) else ""


def task_of(root: Path, texts: Sequence[str]) -> str:
    """The branch the work is on: git's, unless that is a main line and the session names
    a work branch."""
    branch = git_branch(root)
    if branch and branch not in MAIN_BRANCHES:
        return branch
    for text in reversed(texts):
        named = _BRANCH.findall(text)
        if named:
            return named[-1]
    return branch or DEFAULT_TASK


def open_work(session: Sequence) -> str:
    """The open-work sentences of the latest exchange that has any, among the last ones."""
    from memsift.session_end.extract import sentences

    for exchange in reversed(list(session)[-LAST_EXCHANGES:]):
        said = [s for s in sentences(exchange.assistant) if _OPEN.search(s)]
        if said:
            return " ".join(said)
    return ""


def wip_note(session: Sequence, root: Path, source: str) -> Note | None:
    work = open_work(session)
    if not work:
        return None
    texts = [t for e in list(session)[-LAST_EXCHANGES:] for t in (e.user, e.assistant)]
    task = task_of(root, texts)
    text = f"WIP on {task}: {work}"
    if len(text) > MAX_WIP_CHARS:
        text = text[: MAX_WIP_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    meta = {"source": source, "wip": task, "act": "commitment", "by": "agent", "sal": "0.45"}
    return Note(text=text, written=now().date().isoformat(), meta=meta)


def write_wip(notes_file: NotesFile, session: Sequence, root: Path, source: str) -> int:
    """Write the WIP note and let it supersede the task's previous one; 1 when written."""
    note = wip_note(session, root, source)
    if note is None:
        return 0
    from memsift.memory.consolidate import apply_links
    from memsift.memory.lifecycle import Link, visible

    if not notes_file.append([note]):
        return 0  # the same WIP note is there already
    key = text_id(note.text)
    with file_lock(notes_file.lock_path):
        content = notes_file.read_text()
        from memsift.memory.notes import parse

        older = [n.key for n in visible(parse(content))
                 if n.meta.get("wip") == note.meta["wip"] and n.key != key]
        if older:
            notes_file.write_locked(apply_links(content, [Link(key, old, "supersedes")
                                                          for old in older]))
    return 1
