"""The files behind memsift.memory.lifecycle: the per-project state, usage from the audit log, and
`memsift consolidate` (merge near-duplicates, supersede, apply reinforcement, report fading).

The state file (lifecycle.json in the project's data folder) holds only what the notes file
should not: each note's stability and last review, and the usage verdicts waiting to be
applied. Note text is never rewritten here; supersession changes only the trailing metadata
of the two lines involved. Every write is atomic and under a lock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memsift.clock import now as clock_now
from memsift.clock import parse_time
from memsift.events import Turn
from memsift.fsutil import atomic_write, file_lock
from memsift.memory import lifecycle as lc
from memsift.memory.notes import Note, NotesFile, format_note, notes_path, parse, parse_line

STATE_VERSION = 1
STATE_NAME = "lifecycle.json"
STAMP_NAME = "consolidated.stamp"
CONSOLIDATE_EVERY = timedelta(days=1)  # merging and fading move slowly; once a day is plenty
MAX_SEEN = 5000  # usage keys remembered for idempotence; older sessions never come back
EMBED_MAX_NOTES = 5000  # above this, consolidation compares words only (embedding all is slow)


# --- state -------------------------------------------------------------------------------------

def state_path(settings, project_root) -> Path:
    return settings.paths.project_dir(project_root) / STATE_NAME


def empty_state() -> dict[str, Any]:
    return {"v": STATE_VERSION, "notes": {}, "pending": [], "seen": [], "consolidated": ""}


def load_state(path: Path) -> dict[str, Any]:
    """The state, or an empty one when missing or unreadable (it can always be rebuilt: without
    it every note falls back to the stability its salience gives)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty_state()
    if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
        return empty_state()
    state = empty_state()
    state.update({k: data[k] for k in state if k in data and isinstance(data[k], type(state[k]))})
    return state


def update_state(path: Path, change: Callable[[dict[str, Any]], Any]) -> Any:
    """Read, change and write the state under its lock; returns what `change` returned."""
    with file_lock(path.with_name(path.name + ".lock")):
        state = load_state(path)
        result = change(state)
        atomic_write(path, json.dumps(state, ensure_ascii=False, sort_keys=True))
    return result


def note_states(settings, project_root) -> dict[str, Mapping]:
    """What rank() and note_retrievability() take as `state`: note key -> {s, last, ...}."""
    return load_state(state_path(settings, project_root))["notes"]


# --- usage from the audit log --------------------------------------------------------------------

@dataclass(frozen=True)
class Exchange:
    """One prompt as the host saw it: the user's message, the reply, the next user message."""

    message: str
    reply: str
    next_user: str


def exchanges(turns: Sequence[Turn]) -> list[Exchange]:
    users = [i for i, t in enumerate(turns) if t.role == "user"]
    out = []
    for n, i in enumerate(users):
        end = users[n + 1] if n + 1 < len(users) else len(turns)
        reply = "\n".join(t.text for t in turns[i + 1:end] if t.role == "assistant")
        next_user = turns[users[n + 1]].text if n + 1 < len(users) else ""
        out.append(Exchange(turns[i].text, reply, next_user))
    return out


def pair_decisions(decisions: Sequence[Mapping], found: Sequence[Exchange]
                   ) -> list[tuple[Mapping, Exchange]]:
    """Match the session's audit decisions to its user messages: in order, a decision to the
    next message of the length it recorded (hosts may trim, so one character either way)."""
    pairs, start = [], 0
    for decision in decisions:
        length = int(decision.get("prompt_chars", -1))
        for j in range(start, len(found)):
            if abs(len(found[j].message) - length) <= 1:
                pairs.append((decision, found[j]))
                start = j + 1
                break
    return pairs


def usage_events(decisions: Sequence[Mapping], turns: Sequence[Turn],
                 notes: Sequence[Note]) -> list[dict[str, str]]:
    """Verdicts for the notes the audit log says were added: used or contradicted. Notes that
    were not added, or added and ignored, yield nothing."""
    by_key = {n.key: n for n in notes}
    events = []
    for decision, exchange in pair_decisions(decisions, exchanges(turns)):
        for item in decision.get("added", []):
            note = by_key.get(str(item.get("id", "")))
            if note is None or item.get("source", "notes") not in ("notes", "rule"):
                continue
            verdict = lc.usage(note, exchange.message, exchange.reply, exchange.next_user)
            if verdict:
                events.append({"key": f"{decision.get('session', '')}|{decision.get('time', '')}"
                                      f"|{note.key}",
                               "note": note.key, "verdict": verdict,
                               "when": str(decision.get("time", ""))})
    return events


def record_session(project_root, settings, session_id: str, turns: Sequence[Turn],
                   audit_path: Path | None = None) -> int:
    """Queue the usage verdicts of one finished session (idempotent: a rerun on the same
    transcript queues nothing new). Returns how many were queued. The session-end worker calls
    this for every session; consolidation applies the queue."""
    from memsift.audit import read_audit

    audit = audit_path or settings.paths.audit_file
    decisions = [d for d in read_audit(n=2000, project=str(project_root), path=audit)
                 if d.get("session") == session_id]
    notes = NotesFile(notes_path(settings, project_root)).read()
    events = usage_events(decisions, turns, notes)
    return update_state(state_path(settings, project_root), lambda s: _queue(s, events))


def queue_usage(project_root, settings, events: Sequence[dict[str, str]]) -> int:
    """Queue usage verdicts from outside the audit log (the session end's restatements: an
    exchange that repeats a note reinforces it). Idempotent by each event's key."""
    return update_state(state_path(settings, project_root), lambda s: _queue(s, events))


def _queue(state: dict[str, Any], events: Iterable[dict[str, str]]) -> int:
    seen = set(state["seen"])
    fresh = [e for e in events if e["key"] not in seen]
    state["pending"].extend(fresh)
    state["seen"] = (state["seen"] + [e["key"] for e in fresh])[-MAX_SEEN:]
    return len(fresh)


# --- consolidation ---------------------------------------------------------------------------------

@dataclass
class Report:
    """What one consolidation changed, and how the notes stand."""

    project: str
    time: str
    notes: int = 0
    visible: int = 0
    merged: list[dict[str, str]] = field(default_factory=list)  # {new, old}
    superseded: list[dict[str, str]] = field(default_factory=list)  # {new, old}
    reinforced: list[str] = field(default_factory=list)
    weakened: list[str] = field(default_factory=list)
    faded: list[str] = field(default_factory=list)  # visible notes with R below FADED_R
    rules: int = 0
    similarity: str = "words"  # "embedding" when vectors were used

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def embedding_similarity(notes: Sequence[Note]) -> lc.Similarity | None:
    """Cosine of two notes from the offline embedding model, or None when it cannot run (then
    consolidation compares words only)."""
    if not notes or len(notes) > EMBED_MAX_NOTES:
        return None
    try:
        from memsift.model.embed import embed

        matrix = embed([n.text for n in notes])
    except Exception:  # noqa: BLE001 - the model is optional here: words still work
        return None
    index = {n.key: i for i, n in enumerate(notes)}
    sims = matrix @ matrix.T

    def similarity(a: Note, b: Note) -> float | None:
        i, j = index.get(a.key), index.get(b.key)
        return None if i is None or j is None else float(sims[i, j])

    return similarity


def link_notes(notes_file: NotesFile, similarity_for=embedding_similarity
               ) -> tuple[list[lc.Link], bool]:
    """Find supersessions and merges and write them into the notes' metadata (under the notes
    lock; every other line byte for byte). Returns the links and whether vectors were used."""
    with file_lock(notes_file.lock_path):
        content = notes_file.read_text()
        notes = parse(content)
        similarity = similarity_for(lc.visible(notes)) if similarity_for else None
        links = lc.find_links(notes, similarity)
        if links:
            notes_file.write_locked(apply_links(content, links))
    return links, similarity is not None


def apply_links(content: str, links: Sequence[lc.Link]) -> str:
    """The file with superseded_by=<new> on each old note and supersedes=<old,...> on each new
    one; notes' text and all other lines unchanged."""
    updates: dict[str, dict[str, str]] = {}
    for link in links:
        updates.setdefault(link.old, {})["superseded_by"] = link.new
        if link.reason == "duplicate":
            updates[link.old]["merged_into"] = link.new
        new = updates.setdefault(link.new, {})
        new["supersedes"] = ",".join(filter(None, [new.get("supersedes", ""), link.old]))
    lines = content.splitlines(keepends=True)
    for i, line in enumerate(lines):
        note = parse_line(line, i + 1)
        if note is None or note.key not in updates:
            continue
        meta = dict(note.meta)
        change = dict(updates[note.key])
        if "supersedes" in change and meta.get("supersedes"):
            merged = meta["supersedes"].split(",") + change["supersedes"].split(",")
            change["supersedes"] = ",".join(dict.fromkeys(merged))
        meta.update(change)
        ending = line[len(line.rstrip("\r\n")):]
        lines[i] = format_note(Note(note.text, note.key, note.written, meta)) + ending
    return "".join(lines)


def _apply_pending(state: dict[str, Any], notes: Sequence[Note], report: Report) -> None:
    by_key = {n.key: n for n in notes}
    for event in state["pending"]:
        note = by_key.get(event.get("note", ""))
        if note is None:
            continue  # removed by hand since: nothing to reinforce
        entry = state["notes"].get(note.key)
        state["notes"][note.key] = lc.apply_usage(entry, note, event["verdict"], event["when"])
        target = report.reinforced if event["verdict"] == lc.USED else report.weakened
        if note.key not in target:
            target.append(note.key)
    state["pending"] = []


def consolidate(project_root, settings, now: datetime | None = None,
                similarity_for=embedding_similarity) -> Report:
    """Merge near-duplicates, let corrections supersede, apply queued reinforcement, and report
    what faded. Never deletes a note."""
    now = now or clock_now()
    notes_file = NotesFile(notes_path(settings, project_root))
    report = Report(project=str(project_root), time=now.isoformat(timespec="seconds"))
    links, used_vectors = link_notes(notes_file, similarity_for)
    report.similarity = "embedding" if used_vectors else "words"
    for link in links:
        target = report.merged if link.reason == "duplicate" else report.superseded
        target.append({"new": link.new, "old": link.old})
    notes = notes_file.read()

    def change(state: dict[str, Any]) -> None:
        _apply_pending(state, notes, report)
        state["consolidated"] = report.time

    update_state(state_path(settings, project_root), change)
    _fill_standing(report, notes, note_states(settings, project_root), now)
    return report


def _fill_standing(report: Report, notes: Sequence[Note], states: Mapping, now: datetime) -> None:
    live = lc.visible(notes)
    report.notes, report.visible = len(notes), len(live)
    report.rules = sum(1 for n in live if lc.is_rule(n))
    report.faded = [n.key for n in live
                    if lc.note_retrievability(n, now, states) < lc.FADED_R]


def maybe_consolidate(project_root, settings, now: datetime | None = None,
                      similarity_for=embedding_similarity) -> Report | None:
    """Consolidate if the last run is a day old or more (a stamp file in the project's data
    folder, checked and written under a lock so two workers never both run). None if skipped."""
    now = now or clock_now()
    stamp = settings.paths.project_dir(project_root) / STAMP_NAME
    with file_lock(stamp.with_name(stamp.name + ".lock"), timeout=1.0):
        last = _read_stamp(stamp)
        if last is not None and now - last < CONSOLIDATE_EVERY:
            return None
        atomic_write(stamp, now.isoformat(timespec="seconds") + "\n")
    return consolidate(project_root, settings, now, similarity_for)


def _read_stamp(stamp: Path) -> datetime | None:
    try:
        return parse_time(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def history(project_root, settings) -> list[dict[str, str]]:
    """Every supersession and merge in the notes file, oldest note first: what replaced what."""
    notes = NotesFile(notes_path(settings, project_root)).read()
    by_key = {n.key: n for n in notes}
    rows = []
    for note in notes:
        new_key = note.meta.get("superseded_by", "")
        if new_key:
            newer = by_key.get(new_key)
            rows.append({"old": note.key, "old_text": note.text, "written": note.written,
                         "new": new_key, "new_text": newer.text if newer else "",
                         "reason": "duplicate" if note.meta.get("merged_into") else "supersedes"})
    return rows

