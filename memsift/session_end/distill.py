"""Session end: keep from a finished conversation what saves repeating work.

The detached worker calls `process_session(job, settings)` after Stop and SessionEnd. It reads
the host's transcript, takes the exchanges (a user message and the assistant's reply) not yet
processed (memsift.session_end.exchange), redacts secrets first, decides per exchange whether
it is worth a note (memsift.session_end.keepers) and what to do beside what the project holds
(memsift.session_end.decide), and appends one short, dated note with its source for each kept
exchange. Then the notes are revised (memsift.session_end.revise) and the long-term sync, when
present, is told the notes changed.

Idempotent: a state file per session holds how far the transcript was processed and a digest
of that part, so Stop after Stop, SessionEnd after Stop, a crash and a rerun never add a note
twice (the note's source, host:session:turn, is also checked against the notes file).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memsift.clock import now
from memsift.events import Turn
from memsift.fsutil import atomic_write, file_lock
from memsift.log import log
from memsift.memory.notes import Note, NotesFile, notes_path
from memsift.paths import project_root
from memsift.session_end.decide import ADD, HELD, REINFORCE, SUPERSEDE, Decision, decide
from memsift.session_end.exchange import Exchange, exchanges, redacted, session_view
from memsift.session_end.keepers import make_keeper

# -- per-session state ----------------------------------------------------------------------

def _digest(turns: Sequence[Turn], through: int) -> str:
    hasher = hashlib.sha256()
    for turn in turns[: through + 1]:
        hasher.update(f"{turn.role}\0{turn.text}\0".encode())
    return hasher.hexdigest()


def state_path(settings, root: Path, session_id: str) -> Path:
    key = re.sub(r"[^A-Za-z0-9_-]", "", session_id)[:40]
    key += "-" + hashlib.sha256(session_id.encode()).hexdigest()[:10]
    return settings.paths.project_dir(root) / "sessions" / f"{key}.json"


def _processed_through(path: Path, turns: Sequence[Turn]) -> int:
    """Index of the last turn already processed; -1 when none or when the transcript no
    longer starts with what was processed (rewritten or compacted: start over, the source
    check keeps notes from doubling)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        through = int(state["through"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1
    if through >= len(turns) or _digest(turns, through) != state.get("digest"):
        return -1
    return through


def _save_state(path: Path, turns: Sequence[Turn], through: int) -> None:
    state = {"through": through, "digest": _digest(turns, through), "updated": now().isoformat()}
    atomic_write(path, json.dumps(state))


# -- the note's source and speaker -----------------------------------------------------

STATEMENT_MIN_WORDS = 8  # a user message this long that asks nothing states the choice itself


def speaker_of(exchange: Exchange) -> str:
    """Who made the choice the note keeps: the user when they stated it, else the agent
    (memsift.memory.lifecycle weighs a person's decision above the agent's)."""
    from memsift.memory.lifecycle import AGENT, USER

    user = exchange.user.strip()
    return USER if not user.endswith("?") and len(user.split()) >= STATEMENT_MIN_WORDS else AGENT


def note_meta(text: str, exchange: Exchange, source: str) -> dict[str, str]:
    """source, and act/by/sal as memsift.memory.lifecycle annotates a new note."""
    from memsift.memory.lifecycle import annotate

    return {"source": source, **annotate(text, speaker_of(exchange))}


# -- the pass ------------------------------------------------------------------------------

def source_of(host: str, session_id: str, turn: int) -> str:
    return f"{host}:{session_id}:{turn}"


def _field(job: Any, name: str) -> str:
    return str(job.get(name, "") if isinstance(job, dict) else getattr(job, name, ""))


def _read_turns(host: str, transcript_path: str) -> list[Turn]:
    from memsift.hosts import adapter_for

    return adapter_for(host).read_transcript(transcript_path)


def _notes_of(decisions: Sequence[Decision], host: str, session_id: str) -> list[Note]:
    written = now().date().isoformat()
    notes = []
    for d in decisions:
        if d.action not in (ADD, SUPERSEDE):
            continue
        meta = note_meta(d.text, d.exchange, source_of(host, session_id, d.exchange.turn))
        if d.action == SUPERSEDE:
            meta["supersedes"] = d.restates.key
        notes.append(Note(text=d.text, written=written, meta=meta))
    return notes


def process_session(job: Any, settings, *, transport=None) -> dict:
    """Distill the unprocessed part of one session into notes; returns what it did."""
    host, session_id = _field(job, "host"), _field(job, "session_id")
    event = _field(job, "event")
    root = project_root(_field(job, "cwd") or ".")
    turns = _read_turns(host, _field(job, "transcript_path"))
    state = state_path(settings, root, session_id)
    notes_file = NotesFile(notes_path(settings, root))
    with file_lock(state.with_name(state.name + ".lock"), timeout=300.0):
        through = _processed_through(state, turns)
        session = [redacted(e) for e in exchanges(turns)]
        pending = [e for e in session if e.turn > through]
        outcome = _distill(session, pending, notes_file, settings, root, host, session_id,
                           transport)
        if event == "SessionEnd":
            outcome["wip"] = _wip(session, notes_file, root, host, session_id)
        if pending:
            _save_state(state, turns, pending[-1].end)
    added = outcome.pop("notes")
    revised = _revise(notes_file, settings, event, added, transport)
    if added or revised or outcome.get("wip"):
        notes_changed(root, settings)
    return {"turns": len(turns), "exchanges": len(pending), "added": len(added),
            "revised": revised, **outcome}


def _distill(session: Sequence[Exchange], pending: Sequence[Exchange], notes_file: NotesFile,
             settings, root: Path, host: str, session_id: str, transport) -> dict:
    empty = {"notes": [], "kept": 0, "reinforced": 0, "superseded": 0, "held": 0}
    current = notes_file.read()
    known = {n.meta.get("source", "") for n in current}
    pending = [e for e in pending if source_of(host, session_id, e.turn) not in known]
    if not pending:
        return empty  # none, or all kept by an earlier pass whose state was lost
    from memsift.session_end.held import load_memory

    view = session_view(session)
    view.memory = load_memory(settings, root, current,
                              [e.assistant for e in pending], view.embed)
    keeper = make_keeper(settings, transport=transport)
    try:
        decisions = decide(view, pending, keeper)
    finally:
        if hasattr(keeper, "close"):
            keeper.close()
    added = _write(notes_file, _notes_of(decisions, host, session_id))
    reinforced = _reinforce(settings, root, decisions, host, session_id)
    counts = {action: sum(d.action == action for d in decisions)
              for action in (SUPERSEDE, HELD)}
    log("info", "session distilled", session=session_id, exchanges=len(pending),
        added=len(added), reinforced=reinforced, superseded=counts[SUPERSEDE],
        held=counts[HELD], keeper=keeper.name)
    return {"notes": added, "kept": sum(d.keep for d in decisions), "reinforced": reinforced,
            "superseded": counts[SUPERSEDE], "held": counts[HELD]}


def _write(notes_file: NotesFile, notes: Sequence[Note]) -> list[Note]:
    """Append the new notes, then mark each note a new one supersedes (its text unchanged)."""
    added = notes_file.append(notes) if notes else []
    links = [(n, n.meta["supersedes"]) for n in added if n.meta.get("supersedes")]
    if links:
        from memsift.memory.consolidate import apply_links
        from memsift.memory.lifecycle import Link
        from memsift.memory.notes import text_id

        with file_lock(notes_file.lock_path):
            content = notes_file.read_text()
            notes_file.write_locked(apply_links(content, [
                Link(text_id(n.text), old, "supersedes") for n, old in links]))
    return added


def _reinforce(settings, root: Path, decisions: Sequence[Decision], host: str,
               session_id: str) -> int:
    from memsift.session_end.held import reinforce

    when = now().isoformat(timespec="seconds")
    events = [(d.restates.key, source_of(host, session_id, d.exchange.turn), when)
              for d in decisions if d.action == REINFORCE]
    try:
        return reinforce(settings, root, events)
    except OSError as exc:  # a lost reinforcement, never a lost note
        log("warning", "restated notes not reinforced", error=str(exc))
        return 0


def _wip(session: Sequence[Exchange], notes_file: NotesFile, root: Path, host: str,
         session_id: str) -> int:
    """The session's last open work as one WIP note, replacing the branch's previous one."""
    from memsift.session_end import wip

    try:
        return wip.write_wip(notes_file, session, root, f"{host}:{session_id}:wip")
    except OSError as exc:
        log("warning", "WIP note not written", error=str(exc))
        return 0


def _revise(notes_file: NotesFile, settings, event: str, added: Sequence[Note],
            transport) -> int:
    """Offline merge and supersede after new notes; the LLM's pass at the session's end."""
    from memsift.session_end import revise
    changed = 0
    try:
        if added:
            changed += revise.offline_pass(notes_file, fresh=[n.text for n in added])
        if event == "SessionEnd" and settings.get("llm.base_url"):
            changed += revise.llm_pass(notes_file, settings, transport=transport)
    except Exception as exc:  # noqa: BLE001 - revision is an extra; the notes are written
        log("warning", "notes revision failed, notes left as written",
            error=f"{type(exc).__name__}: {exc}")
    return changed


def notes_changed(root: Path, settings) -> None:
    """Tell the long-term sync (memsift.longterm.sync, when installed) that the notes changed."""
    if importlib.util.find_spec("memsift.longterm.sync") is None:
        return
    try:
        from memsift.longterm import sync
        sync.notes_changed(root, settings)
    except Exception as exc:  # noqa: BLE001 - the sync retries later; notes are safe
        log("warning", "notes sync failed", error=f"{type(exc).__name__}: {exc}")
