"""Session end, detached from the host.

Stop and SessionEnd hooks must return inside the host's budget (Claude Code cancels a
SessionEnd hook after 1.5 s, Codex after 3 s), so the hook only writes a job file and starts
this module as a process of its own session; it outlives the hook and the host.

One job file per session (`queue/<session>.json`): a later event of the same session replaces
an unclaimed job, so a burst of Stop events costs one pass. A worker claims the file by
renaming it, and holds a per-session lock so two workers never work on one session at once.

The work itself is `memsift.session_end.distill.process_session(job, settings)`; until that module
exists the worker reads the transcript, logs how many turns it has and marks the job done.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from memsift.clock import now_iso
from memsift.events import Event
from memsift.fsutil import LockTimeout, atomic_write, file_lock
from memsift.log import log

# A worker of the same session may still be distilling; waiting this long for it is cheap
# (the process is detached) and keeps Stop and SessionEnd from running side by side.
SESSION_LOCK_WAIT_S = 300.0


@dataclass(frozen=True)
class Job:
    """What the session-end work needs: which transcript, from which host, for which project."""

    host: str
    session_id: str
    transcript_path: str
    cwd: str
    event: str
    queued_at: str


def worker_dir(data_dir: Path) -> Path:
    return data_dir / "worker"


def session_file_key(session_id: str) -> str:
    """A file name for a session id, safe whatever the host sends."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "", session_id)[:64]
    if safe == session_id and safe:
        return safe
    return f"{safe[:40]}-{hashlib.sha256(session_id.encode()).hexdigest()[:12]}"


def done_marker(data_dir: Path, session_id: str) -> Path:
    """Written when a pass over the session finished (what it did, as JSON)."""
    return worker_dir(data_dir) / "done" / f"{session_file_key(session_id)}.json"


def hand_off(event: Event, settings) -> None:
    """Queue the session for the worker and start one, detached; returns at once."""
    job = Job(host=event.host, session_id=event.session_id,
              transcript_path=event.transcript_path, cwd=event.cwd, event=event.name,
              queued_at=now_iso())
    queue = worker_dir(settings.paths.data_dir) / "queue"
    path = queue / f"{session_file_key(job.session_id)}.json"
    atomic_write(path, json.dumps(asdict(job)))
    _spawn(path, settings.paths.log_dir)
    log("info", "session handed to the worker", host=job.host, session=job.session_id,
        event=job.event)


def _spawn(job_path: Path, log_dir: Path) -> None:
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    # A crash's traceback lands in a file of its own rather than being lost.
    with open(log_dir / "worker-stderr.log", "ab") as stderr:
        subprocess.Popen(
            [sys.executable, "-m", "memsift.session_end.worker", str(job_path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True, close_fds=True, cwd=str(job_path.parent),
        )


def _claim(job_path: Path) -> Job | None:
    """Take the queued job by renaming it; None when another worker already took it."""
    claimed = job_path.with_name(f"{job_path.stem}.{os.getpid()}.working")
    try:
        os.replace(job_path, claimed)
    except FileNotFoundError:
        return None
    try:
        return Job(**json.loads(claimed.read_text(encoding="utf-8")))
    finally:
        claimed.unlink(missing_ok=True)


def _distill(job: Job, settings) -> dict:
    """The session-end work: read the transcript, then memsift.session_end.distill when present."""
    from memsift.hosts import adapter_for

    turns = adapter_for(job.host).read_transcript(job.transcript_path)
    log("info", "session read", host=job.host, session=job.session_id, turns=len(turns))
    if importlib.util.find_spec("memsift.session_end.distill") is None:
        return {"turns": len(turns)}
    from memsift.session_end import distill
    outcome = distill.process_session(job, settings)
    _upkeep(job, turns, settings)
    return {"turns": len(turns), **(outcome if isinstance(outcome, dict) else {})}


def _upkeep(job: Job, turns, settings) -> None:
    """Off the prompt path, after the notes are written: record which added notes the
    session used or contradicted, consolidate at most once a day, and probe paused services
    so they resume without waiting on a prompt. Each is an extra: a failure is logged."""
    from memsift.memory import consolidate
    from memsift.paths import project_root
    from memsift.services import health

    root = project_root(job.cwd or ".")
    steps = (
        ("record usage", lambda: consolidate.record_session(root, settings, job.session_id,
                                                             turns)),
        ("consolidate", lambda: consolidate.maybe_consolidate(root, settings)),
        ("probe", lambda: health.probe_all(settings)),
    )
    for name, step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001
            log("warning", f"session-end {name} failed", error=f"{type(exc).__name__}: {exc}")


def run_job(job_path: Path, settings) -> bool:
    """Process the queued job at job_path under the session's lock; False if none was left."""
    key = job_path.stem
    lock = worker_dir(settings.paths.data_dir) / "locks" / f"{key}.lock"
    with file_lock(lock, timeout=SESSION_LOCK_WAIT_S):
        job = _claim(job_path)
        if job is None:
            return False
        outcome = _distill(job, settings)
        marker = {"session_id": job.session_id, "event": job.event, "host": job.host,
                  "finished_at": now_iso(), **outcome}
        atomic_write(done_marker(settings.paths.data_dir, job.session_id), json.dumps(marker))
        return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        from memsift.config import load_settings

        settings = load_settings(strict=False)
        if len(args) != 1:
            log("warning", "worker called without one job file, nothing done", argv=args)
            return 0
        run_job(Path(args[0]), settings)
    except LockTimeout as exc:
        log("warning", "session still locked by another worker, job left queued",
            error=str(exc))
    except Exception as exc:  # noqa: BLE001 - detached: the log is the only place to say it
        log("error", "session-end worker failed", error=f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
