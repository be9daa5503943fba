"""How the prompt path scales with the number of notes: `python -m memsift.bench.scale`.

For each size, a project with that many notes is replayed through the real hook (a fresh
process per message, as the host runs it) and the wait and the notes step's time are printed.
The cached vectors of the notes are random unit rows written under the real model id: the
prompt path's cost (read the matrix, one product, judge the nearest) does not depend on their
values, and embedding 10,000 notes first would take longer than the measurement itself.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

SIZES = (50, 10_000)
MESSAGES = (
    "what did we decide about the retry policy for the payment webhook?",
    "the nightly export failed again with the same timeout, what was the fix last time?",
    "where did I leave the refunds branch?",
    "should the new report endpoint be paginated like the others?",
    "why do we store money as integer cents?",
    "set up the staging schema the same way as the other services",
)


def _notes(n: int) -> list:
    from memsift.memory.notes import Note

    topics = ("payments", "exports", "refunds", "reports", "schema", "deploys", "tests", "auth")
    return [Note(f"Note {i}: the {topics[i % len(topics)]} rule number {i} says to check "
                 f"item {i * 7 % 1000} before release {i % 40}.", id=f"n{i:05d}",
                 written="2026-01-01") for i in range(n)]


def _project(workdir: Path, n: int, settings) -> Path:
    from memsift.memory.notes import NotesFile, notes_path
    from memsift.model.embed import DIM, MODEL_ID
    from memsift.model.vectors import VectorCache, text_hash

    project = workdir / f"project-{n}"
    (project / ".git").mkdir(parents=True)
    notes = NotesFile(notes_path(settings, project))
    written = notes.append(_notes(n))
    rows = np.random.default_rng(n).standard_normal((len(written), DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    cache = VectorCache(notes.path.parent, "notes", lambda t: rows[: len(t)], MODEL_ID)
    cache._save([text_hash(x.text) for x in written], rows, np.ones(len(written), bool))
    return project


def measure(n: int, workdir: Path) -> dict:
    from memsift.audit import read_audit
    from memsift.bench.replay import Transcript, percentile, run_hook
    from memsift.config import load_settings

    project = _project(workdir, n, load_settings())
    transcript = Transcript(workdir / f"transcript-{n}.jsonl", project)
    waits, steps_ms = [], {}
    for index, message in enumerate(MESSAGES, start=1):
        transcript.user(message)
        _, wait = run_hook(message, transcript, index, dict(os.environ))
        transcript.assistant("ok")
        waits.append(wait)
        for step in read_audit(1)[0]["steps"]:
            steps_ms.setdefault(step["name"], []).append(step["ms"])
    waits.sort()
    return {"notes": n, "messages": len(waits), "wait_mean_s": round(sum(waits) / len(waits), 4),
            "wait_p95_s": round(percentile(waits, 95), 4),
            "step_mean_ms": {k: round(sum(v) / len(v), 1) for k, v in steps_ms.items()}}


def main(sizes=SIZES) -> list[dict]:
    from memsift.bench.replay import memsift_home

    results = []
    with tempfile.TemporaryDirectory(prefix="memsift-scale-") as tmp, \
            memsift_home(Path(tmp) / "home"):
        for n in sizes:
            results.append(measure(n, Path(tmp)))
    return results


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    print(json.dumps(main(sizes), indent=2))
