"""How the prompt path scales with the number of notes and the length of the prompt:
`memsift bench --scale` (or `python -m memsift.bench.scale`).

For each size, a project with that many notes is replayed through the real hook (a fresh
process per message, as the host runs it) and the wait and the notes step's time are printed.
Then the demo's sample project gets the same question twice, once alone and once with a
99,000-character log pasted after it (memsift.prompt.focus): both waits are printed side by
side, with whether the note that answers was added.
The cached vectors of the notes are random unit rows written under the real model id: the
prompt path's cost (read the matrix, one product, judge the nearest) does not depend on their
values, and embedding 10,000 notes first would take longer than the measurement itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
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


def fresh_env() -> dict:
    """Fresh hook processes, as the numbers say: no warm server (memsift.warm)."""
    return dict(os.environ) | {"MEMSIFT_WARM": "0"}


def measure(n: int, workdir: Path) -> dict:
    from memsift.audit import read_audit
    from memsift.bench.replay import Transcript, percentile, run_hook
    from memsift.config import load_settings

    project = _project(workdir, n, load_settings())
    transcript = Transcript(workdir / f"transcript-{n}.jsonl", project)
    waits, steps_ms = [], {}
    for index, message in enumerate(MESSAGES, start=1):
        transcript.user(message)
        _, wait = run_hook(message, transcript, index, fresh_env())
        transcript.assistant("ok")
        waits.append(wait)
        for step in read_audit(1)[0]["steps"]:
            steps_ms.setdefault(step["name"], []).append(step["ms"])
    waits.sort()
    return {"notes": n, "messages": len(waits), "wait_mean_s": round(sum(waits) / len(waits), 4),
            "wait_p95_s": round(percentile(waits, 95), 4),
            "step_mean_ms": {k: round(sum(v) / len(v), 1) for k, v in steps_ms.items()}}


# The long prompt: a question, then a pasted test log, as people paste into coding agents.
LONG_PROMPT_CHARS = 99_000
QUESTION = "where did I leave the feat/refunds branch? the tests below fail"
EXPECTED_NOTE = "n04"  # the sample note that answers it
LOG_LINE = ("2026-11-30 09:14:{s:02d},{ms:03d} DEBUG tests/integration/test_refunds.py::"
            "test_refund_{n} waiting for database at localhost:5433 (attempt {n})\n")
PROMPT_RUNS = 5  # fresh processes per prompt, alternating short and long


def long_prompt(question: str = QUESTION, chars: int = LONG_PROMPT_CHARS) -> str:
    """The question, a pasted log (cut to fit), and a closing line: `chars` characters."""
    head, closing = question + "\n\n```\n", "\n```\n\nsame as on friday, any idea?"
    room = chars - len(head) - len(closing)
    lines, size, n = [], 0, 0
    while size < room:
        lines.append(LOG_LINE.format(s=n % 60, ms=n * 7 % 1000, n=n))
        size += len(lines[-1])
        n += 1
    return head + "".join(lines)[:room] + closing


def measure_prompts(workdir: Path, runs: int = PROMPT_RUNS) -> list[dict]:
    """The sample project's question short and with the paste, each in fresh hook processes."""
    from memsift.audit import read_audit
    from memsift.bench.replay import Transcript, percentile, prepare
    from memsift.commands.demo_run import load_sample

    _, project = prepare(load_sample(), workdir / "prompts", "embedded")
    prompts = {"short": QUESTION, "long": long_prompt()}
    rows = {name: {"prompt": name, "prompt_chars": len(text), "waits": [], "added": 0,
                   "timeouts": 0} for name, text in prompts.items()}
    for index in range(runs):
        for name, text in prompts.items():
            transcript = Transcript(workdir / f"transcript-{name}-{index}.jsonl", project)
            transcript.user(text)
            wait = _first_prompt(text, transcript, f"scale-{name}-{index}")
            decision = read_audit(1)[0]
            row = rows[name]
            row["waits"].append(wait)
            row["added"] += any(a.get("id") == EXPECTED_NOTE for a in decision.get("added", []))
            row["timeouts"] += sum(1 for s in decision.get("steps", [])
                                   if "timeout" in str(s.get("result")))
    out = []
    for row in rows.values():
        waits = sorted(row.pop("waits"))
        out.append(row | {"runs": len(waits), "wait_mean_s": round(sum(waits) / len(waits), 4),
                          "wait_p95_s": round(percentile(waits, 95), 4)})
    return out


def _first_prompt(prompt: str, transcript, session: str) -> float:
    """One fresh hook process for the first prompt of its own session, timed spawn to exit
    (a session of its own: a note given earlier in a session is not given again)."""
    from memsift.bench.replay import HOOK_TIMEOUT_S, hook_payload

    payload = json.loads(hook_payload(prompt, transcript, 1)) | {"session_id": session}
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memsift", "hook", "claude-code", "UserPromptSubmit"],
                   input=json.dumps(payload).encode(), capture_output=True, env=fresh_env(),
                   cwd=transcript.cwd, timeout=HOOK_TIMEOUT_S, check=False)
    return time.perf_counter() - begin


def main(sizes=SIZES) -> list[dict]:
    from memsift.bench.replay import memsift_home
    from memsift.model.caches import prepare as prepare_models
    from memsift.paths import get_paths

    results = []
    with tempfile.TemporaryDirectory(prefix="memsift-scale-") as tmp, \
            memsift_home(Path(tmp) / "home"):
        prepare_models(get_paths().cache_dir)  # as set-up does
        for n in sizes:
            results.append(measure(n, Path(tmp)))
        results.extend(measure_prompts(Path(tmp)))
    return results


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    print(json.dumps(main(sizes), indent=2))
