"""The audit log: one JSON line per prompt decision, what was added and why (docs/audit.md).

Written by the cascade at the end of every prompt, read by `memsift status`. The prompt text
itself is never written here (only its length): the audit log says what memsift did, the
notes and the store hold what it knows.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memsift.clock import now_iso
from memsift.fsutil import append_line

AUDIT_VERSION = 1
TAIL_CHUNK = 64 * 1024  # read the log backwards in blocks: `status` wants the last lines only
JUDGED_SHOWN = 4  # the best-scored items of each source the line keeps, added or not


@dataclass
class StepRecord:
    """One step of the cascade: how long it took and how it ended."""

    name: str  # kind | notes | worth | longterm | passages | conversation | render
    ms: float
    result: str  # "builds_on", "no-search", "2 kept", "no", "timeout", "error", "skipped: ..."


@dataclass
class ItemRecord:
    """One item added to the prompt."""

    id: str
    source: str  # notes | longterm
    score: float
    written: str = ""


@dataclass
class JudgedRecord:
    """One item the judge scored, added or not, and the bar it had to reach: what says why
    a note that should have come did not."""

    id: str
    source: str  # notes | longterm
    score: float
    bar: float


@dataclass
class Decision:
    """Everything one prompt's cascade decided; one line of the audit log."""

    project: str
    session: str = ""
    host: str = ""
    time: str = field(default_factory=now_iso)
    kind: str = ""
    kind_p: float = 0.0  # probability of the chosen kind
    search_p: float = 0.0  # probability mass on the kinds that call for memory
    prompt_chars: int = 0
    steps: list[StepRecord] = field(default_factory=list)
    added: list[ItemRecord] = field(default_factory=list)
    judged: list[JudgedRecord] = field(default_factory=list)  # the best few of each source
    chars: int = 0  # characters added to the prompt
    wait_ms: float = 0.0  # the whole prompt path, process start to result when known
    errors: list[str] = field(default_factory=list)
    # The remote judge, when one was asked: backend, model, requests, tokens and the servers'
    # request ids (x-typesafe-request-id, x-request-id), to find a decision in their logs.
    judge: dict[str, Any] = field(default_factory=dict)
    warm: bool = False  # answered by the warm server (memsift.warm), not a process of its own
    v: int = AUDIT_VERSION

    def step(self, name: str, ms: float, result: str) -> None:
        self.steps.append(StepRecord(name, round(ms, 2), result))

    def judged_items(self, source: str, scored, bar: float) -> None:
        """Record the best JUDGED_SHOWN of one source's scored items (id, score) and its bar."""
        best = sorted(scored, key=lambda i: -i.score)[:JUDGED_SHOWN]
        self.judged.extend(JudgedRecord(str(i.id), source, float(i.score), float(bar))
                           for i in best)

    def error(self, step: str, reason: str) -> None:
        self.errors.append(f"{step}: {reason}")

    def to_json(self) -> str:
        data = asdict(self)
        data["kind_p"] = round(self.kind_p, 4)
        data["search_p"] = round(self.search_p, 4)
        data["wait_ms"] = round(self.wait_ms, 2)
        for item in data["added"] + data["judged"]:
            item["score"] = round(item["score"], 4)
        for item in data["judged"]:
            item["bar"] = round(item["bar"], 4)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def write_decision(decision: Decision, path: Path) -> None:
    """Append one decision line; the caller (a hook) catches OSError and logs it."""
    append_line(path, decision.to_json())


def _tail_lines(path: Path, wanted: int) -> tuple[list[str], bool]:
    """The last lines of a file, read in blocks from the end (the log only grows), and
    whether the whole file was read."""
    try:
        with open(path, "rb") as handle:
            data, end = _read_back(handle, wanted)
    except FileNotFoundError:
        return [], True
    lines = data.decode("utf-8", errors="replace").splitlines()
    if end == 0:
        return lines, True
    return lines[1:], False  # the first line may be cut in the middle


def _read_back(handle, wanted: int) -> tuple[bytes, int]:
    end = handle.seek(0, os.SEEK_END)
    data = b""
    while end > 0 and data.count(b"\n") <= wanted:
        start = max(0, end - TAIL_CHUNK)
        handle.seek(start)
        data = handle.read(end - start) + data
        end = start
    return data, end


def _parse(line: str) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "project" in data else None


def read_audit(n: int = 20, project: str | os.PathLike[str] | None = None,
               path: Path | None = None) -> list[dict[str, Any]]:
    """The last `n` decisions (oldest first), of one project if given; corrupt lines skipped."""
    if path is None:
        from memsift.paths import get_paths

        path = get_paths().audit_file
    wanted = str(project) if project is not None else None
    found: list[dict[str, Any]] = []
    budget = n
    while True:
        lines, whole = _tail_lines(path, budget)
        found = [d for d in map(_parse, lines) if d and (wanted is None or d["project"] == wanted)]
        if len(found) >= n or whole:
            return found[-n:] if n > 0 else []
        budget *= 4  # one project among many: read further back


# Where an item that should have come was lost, from its prompt's line; the furthest stage
# first (a turn reports the furthest any of its expected items reached).
LOST_STAGES = ("dropped", "below_bar", "outranked", "not_searched")


def where_lost(decision: dict[str, Any], expect: list[str],
               got: set[str]) -> list[tuple[str, str, str]]:
    """(id, stage, why) for each expected item not added: the kind step ruled out the search
    ("not_searched"), the item was judged below its bar ("below_bar", with both numbers),
    above it and dropped by a later filter ("dropped"), or it was not among the best
    candidates the line keeps ("outranked": four better-scored, or not a candidate)."""
    missing = [e for e in expect if e not in got]
    steps = {s.get("name"): s.get("result", "") for s in decision.get("steps") or []}
    if missing and (steps.get("kind") in ("no-search", "empty") or "notes" not in steps):
        why = (f"not searched, the message read as {decision.get('kind') or '?'} "
               f"(memory needed p {float(decision.get('search_p') or 0.0):.2f})")
        return [(e, "not_searched", why) for e in missing]
    judged = {str(j.get("id")): j for j in decision.get("judged") or []}
    out = []
    for e in missing:
        j = judged.get(e)
        if j is None:
            stage, why = "outranked", ("not among the four best-scored of its source, "
                                       "or not a candidate")
        elif j["score"] < j["bar"]:
            stage, why = "below_bar", f"judged {j['score']:.2f}, below the bar {j['bar']:.2f}"
        else:
            stage, why = "dropped", (f"judged {j['score']:.2f}, above the bar {j['bar']:.2f}, "
                                     "then dropped (named nobody the message names, or given "
                                     "before)")
        out.append((e, stage, why))
    return out


def furthest_stage(lost: list[tuple[str, str, str]]) -> str:
    """The stage the closest of a turn's expected items reached, "" when none was lost."""
    stages = {stage for _, stage, _ in lost}
    return next((s for s in LOST_STAGES if s in stages), "")


SESSION_LOOKBACK_LINES = 2000  # of the log's tail: a long session's prompts, many projects


def session_added(session: str, project: str, path: Path,
                  lookback: int = SESSION_LOOKBACK_LINES) -> set[str]:
    """Ids of the items already added to this session's prompts: the agent holds them."""
    if not session:
        return set()
    lines, _ = _tail_lines(path, lookback)
    ids: set[str] = set()
    for line in lines:
        if session not in line:
            continue  # most lines are other sessions': skip them before parsing
        data = _parse(line)
        if data and data.get("session") == session and data.get("project") == project:
            ids.update(str(item.get("id")) for item in data.get("added") or [])
    return ids
