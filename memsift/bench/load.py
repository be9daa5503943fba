"""Load benchmark: many hook processes at once on one project, then many prompts in a row.

    memsift bench --load            20 processes at once, then 2,000 prompts in a row

Each prompt goes through the real hook entry (`memsift.hook.main`) with a Claude Code payload,
on one project with a few notes, in a private MEMSIFT_HOME (the user's memory is not touched
unless --home says so). It checks that every hook exited 0, that each prompt left exactly one
audit line (nothing lost to concurrent appends), and prints the wait: p50 and p95 of the
audit's wait_ms and of the wall time around each hook.

The prompts in a row run in one process by default (the cascade's own cost, many samples);
`spawn=True` runs each as a fresh process, as a host does (start-up included, much slower).
"""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PROMPTS = (
    "why do staging model names use a double underscore",
    "thanks, that works",
    "resume the migration of the orders table we started yesterday",
    "run the tests",
    "what did we decide about the retry policy for the sync job",
)
NOTES = (
    "Staging model names use a double underscore between source and table.",
    "The sync job retries three times with exponential backoff, then gives up.",
    "Orders migration: step 2 of 4 done, backfill pending.",
)
PROCESS_TIMEOUT_S = 120.0  # one hook process; 20 at once on 2 cores share the CPU


@dataclass
class Phase:
    name: str
    prompts: int
    errors: list[str] = field(default_factory=list)
    audit_lines: int = 0
    step_failures: int = 0  # steps that timed out or failed: the cascade went on without them
    wall_ms: list[float] = field(default_factory=list)
    wait_ms: list[float] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.prompts - self.audit_lines

    def summary(self) -> dict:
        return {"phase": self.name, "prompts": self.prompts, "errors": len(self.errors),
                "lost_audit_lines": self.lost,
                "step_failures": self.step_failures, "wait_ms": percentiles(self.wait_ms),
                "wall_ms": percentiles(self.wall_ms), "first_errors": self.errors[:3]}


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "max": 0.0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1),
            "max": round(ordered[-1], 1)}


def payload(project: Path, index: int, session: str) -> bytes:
    return json.dumps({
        "session_id": session, "cwd": str(project), "transcript_path": "",
        "hook_event_name": "UserPromptSubmit", "prompt": PROMPTS[index % len(PROMPTS)],
    }).encode()


def prepare(home: Path) -> Path:
    """A project with a few notes and the models' caches, in the benchmark's own
    MEMSIFT_HOME."""
    os.environ["MEMSIFT_HOME"] = str(home)
    from memsift.config import load_settings
    from memsift.memory.notes import Note, NotesFile, notes_path
    from memsift.model.caches import prepare as prepare_models

    project = home / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    settings = load_settings(strict=False)
    NotesFile(notes_path(settings, project)).append(Note(text) for text in NOTES)
    prepare_models(settings.paths.cache_dir)  # as set-up does
    return project


def audit_lines(home: Path) -> list[dict]:
    path = home / "data" / "audit.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [d for d in map(_parse, lines) if d is not None]


def _parse(line: str) -> dict | None:
    """A decision, or None for a line that is not one (it counts as lost)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "project" in data else None


def _hook_command() -> list[str]:
    return [sys.executable, "-m", "memsift", "hook", "claude-code", "UserPromptSubmit"]


def at_once(home: Path, project: Path, processes: int) -> Phase:
    """`processes` hook processes started together on one project."""
    phase = Phase("at once", processes)
    before = len(audit_lines(home))
    started = []
    for i in range(processes):
        proc = subprocess.Popen(_hook_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=dict(os.environ))
        started.append((proc, time.perf_counter()))
    for i, (proc, begin) in enumerate(started):
        _finish(phase, proc, begin, payload(project, i, f"load-{i}"))
    _collect(phase, home, before)
    return phase


def _finish(phase: Phase, proc: subprocess.Popen, begin: float, data: bytes) -> None:
    try:
        out, err = proc.communicate(data, timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        phase.errors.append("a hook process ran past its timeout")
        return
    phase.wall_ms.append((time.perf_counter() - begin) * 1000)
    if proc.returncode != 0:
        phase.errors.append(f"exit {proc.returncode}: {err.decode(errors='replace')[-200:]}")
    elif out and not _valid_output(out):
        phase.errors.append(f"stdout is not the host's JSON: {out[:120]!r}")


def _valid_output(out: bytes) -> bool:
    try:
        return isinstance(json.loads(out), dict)
    except ValueError:
        return False


def in_a_row(home: Path, project: Path, prompts: int, spawn: bool = False) -> Phase:
    """`prompts` prompts one after another in one session."""
    phase = Phase("in a row" + (" (processes)" if spawn else ""), prompts)
    before = len(audit_lines(home))
    for i in range(prompts):
        data = payload(project, i, "load-row")
        if spawn:
            proc = subprocess.Popen(_hook_command(), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _finish(phase, proc, time.perf_counter(), data)
        else:
            _in_process(phase, data)
    _collect(phase, home, before)
    return phase


def _in_process(phase: Phase, data: bytes) -> None:
    """One prompt through the hook's entry point in this process (stdin and stdout swapped)."""
    from memsift.hook import main

    stdin, stdout = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    sys.stdout = captured = io.StringIO()
    begin = time.perf_counter()
    try:
        code = main(["claude-code", "UserPromptSubmit"])
    finally:
        sys.stdin, sys.stdout = stdin, stdout
    phase.wall_ms.append((time.perf_counter() - begin) * 1000)
    out = captured.getvalue().encode()
    if code != 0:
        phase.errors.append(f"exit {code}")
    elif out and not _valid_output(out):
        phase.errors.append(f"stdout is not the host's JSON: {out[:120]!r}")


def _collect(phase: Phase, home: Path, before: int) -> None:
    fresh = audit_lines(home)[before:]
    phase.audit_lines = len(fresh)
    phase.wait_ms = [float(d.get("wait_ms", 0.0)) for d in fresh]
    failures = [e for d in fresh for e in d.get("errors", [])]
    phase.errors.extend(e for e in failures if e.startswith("cascade"))  # the cascade crashed
    phase.step_failures = sum(1 for e in failures if not e.startswith("cascade"))


def run(processes: int = 20, prompts: int = 2000, home: Path | None = None,
        spawn: bool = False) -> list[Phase]:
    with tempfile.TemporaryDirectory(prefix="memsift-load-") as scratch:
        root = Path(home) if home else Path(scratch)
        saved = os.environ.get("MEMSIFT_HOME")
        try:
            project = prepare(root)
            return [at_once(root, project, processes),
                    in_a_row(root, project, prompts, spawn=spawn)]
        finally:
            if saved is None:
                os.environ.pop("MEMSIFT_HOME", None)
            else:
                os.environ["MEMSIFT_HOME"] = saved


def main(processes: int = 20, prompts: int = 2000, as_json: bool = False,
         home: Path | None = None, spawn: bool = False) -> int:
    """Run the load benchmark and print its numbers; returns 1 when a prompt failed or an
    audit line was lost."""
    phases = run(processes, prompts, home, spawn)
    summaries = [p.summary() for p in phases]
    if as_json:
        print(json.dumps(summaries, indent=1))
    else:
        for s in summaries:
            print(f"{s['phase']:>12}: {s['prompts']} prompts, {s['errors']} errors, "
                  f"{s['lost_audit_lines']} audit lines lost, {s['step_failures']} step failures; wait p50 {s['wait_ms']['p50']} ms,"
                  f" p95 {s['wait_ms']['p95']} ms; wall p50 {s['wall_ms']['p50']} ms, "
                  f"p95 {s['wall_ms']['p95']} ms")
            for error in s["first_errors"]:
                print(f"{'':>14}{error}")
    return 0 if all(not p.errors and p.lost == 0 for p in phases) else 1


if __name__ == "__main__":
    raise SystemExit(main(*(int(a) for a in sys.argv[1:3])))

