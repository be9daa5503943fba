"""`memsift bench --fanout`: the prompt path's wait with a remote decision model, per item.

A project with 12 notes and 16 long-term passages, a message that calls for memory and that no
note answers, so every step runs: the kind (with "worth a search?" in the same request), each
note judged alone, the long-term search, each passage judged alone. The remote judge is the
System One stand-in (memsift.bench.decision_server) on 127.0.0.1, answering every request after
a scripted latency (0.3 s by default, Jev's published median is 0.43 s). Every prompt is a
fresh hook process, as the host runs it.

It prints the wait the audit line records (process start to result) and the process's own
wall time, p50 and p95, the requests per prompt, and what the same requests would cost one
after another: the requests go out at once, so the wait is about two round trips, not 30.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memsift.bench import environ
from memsift.bench.decision_server import ANSWER_P
from memsift.bench.replay import percentile
from memsift.bench.systemone_server import SystemOneServer

NOTES, PASSAGES = 12, 16  # the cascade's NOTE_CANDIDATES and PASSAGE_CANDIDATES
LATENCY_S = 0.3
PROMPTS = 20  # measured prompts; one more first warms the vector caches
TARGET_P95_S = 0.8
HOOK_TIMEOUT_S = 30.0
MESSAGE = "Why did we choose the ledger layout we use for the billing service?"
ANSWER = "marker-answer"  # the one passage the stand-in says answers
MISS_P = 0.3  # every other item: under every bar, so no step is cut short


def _decide(kind: str, instructions: str, options: list, state) -> list[float]:
    """The kind needs memory, the message is worth a search, one passage answers."""
    if kind == "choice" and "past_choice" in options:
        return [0.9 if o == "past_choice" else 0.1 / (len(options) - 1) for o in options]
    if kind == "yes" and isinstance(state, dict) and "item" in state:
        p = ANSWER_P if ANSWER in str(state["item"]) else MISS_P
        return [p, 1 - p]
    return [0.9, 0.1]


def _project_data() -> dict:
    topics = ["deploys", "migrations", "the cache", "logging", "feature flags", "the queue",
              "retries", "test data", "the linter", "secrets", "backups", "alerts"]
    notes = [{"id": f"n{i:02d}", "text": f"For {t} in the billing service we keep the plain "
              f"setup from the template, revisited in review {i}.", "written": "2026-10-01"}
             for i, t in enumerate(topics)]
    memory = [{"id": f"m{i:02d}", "text": f"Billing service ledger note {i}: the ledger "
               f"layout was discussed for {topics[i % len(topics)]}.", "written": "2026-10-02"}
              for i in range(PASSAGES - 1)]
    memory.append({"id": "m99", "written": "2026-10-03",
                   "text": f"We chose an append-only ledger layout for billing so refunds "
                           f"never rewrite history ({ANSWER})."})
    return {"notes": notes, "memory": memory}


def _prepare(workdir: Path) -> Path:
    from memsift.config import load_settings
    from memsift.memory.importer import import_data

    project = workdir / "project"
    (project / ".git").mkdir(parents=True)
    import_data(_project_data(), load_settings({"cognee.url": ""}), project)
    return project


def _hook(project: Path, env: dict, index: int) -> tuple[float, float]:
    """One fresh hook process: its wall time and its CPU time (user + system)."""
    payload = json.dumps({"session_id": f"fanout-{index}", "hook_event_name": "UserPromptSubmit",
                          "cwd": str(project), "prompt": MESSAGE})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memsift", "hook", "claude-code", "UserPromptSubmit"],
                   input=payload.encode(), capture_output=True, env=env, cwd=project,
                   timeout=HOOK_TIMEOUT_S, check=False)
    wall = time.perf_counter() - begin
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def run(prompts: int = PROMPTS, latency_s: float = LATENCY_S) -> dict:
    from memsift.audit import read_audit

    with tempfile.TemporaryDirectory(prefix="memsift-fanout-") as tmp, \
            SystemOneServer(api_key="bench", latency_s=latency_s, decide=_decide) as server:
        workdir = Path(tmp)
        with environ(MEMSIFT_HOME=str(workdir / "home")):
            project = _prepare(workdir)
            env = dict(os.environ) | {
                "MEMSIFT_WARM": "0",  # fresh hook processes, as it measures
                "MEMSIFT_JUDGE_BACKEND": "systemone", "MEMSIFT_JUDGE_BASE_URL": server.url,
                "MEMSIFT_JUDGE_API_KEY": "bench", "MEMSIFT_COGNEE_URL": "",
                "MEMSIFT_HEALTH_PROBE_EVERY_S": "3600"}
            _hook(project, env, 0)  # the vector caches of notes and passages are made here
            before = len(server.decisions())
            runs = [_hook(project, env, i) for i in range(1, prompts + 1)]
            decisions = read_audit(prompts)
        asked = len(server.decisions()) - before
    waits = sorted(d.get("wait_ms", 0.0) / 1000.0 for d in decisions)
    walls = sorted(wall for wall, _ in runs)
    cpus = sorted(cpu for _, cpu in runs)
    per_prompt = asked / max(1, prompts)
    found = sum(1 for d in decisions if any(a.get("id") == "m99" for a in d.get("added") or []))
    return {"prompts": prompts, "latency_s": latency_s, "notes": NOTES, "passages": PASSAGES,
            "requests_per_prompt": per_prompt,
            "wait_p50_s": round(percentile(waits, 50), 3),
            "wait_p95_s": round(percentile(waits, 95), 3),
            "process_p50_s": round(percentile(walls, 50), 3),
            "process_p95_s": round(percentile(walls, 95), 3),
            "process_cpu_p50_s": round(percentile(cpus, 50), 3),
            "one_after_another_s": round(per_prompt * latency_s, 2),
            "answer_added": found, "target_wait_p95_s": TARGET_P95_S,
            "errors": sorted({e for d in decisions for e in d.get("errors") or []}),
            "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count()}


def main(as_json: bool = False) -> int:
    report = run()
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 0 if report["wait_p95_s"] <= TARGET_P95_S else 1


def _print(r: dict) -> None:
    def line(label: str, value: str, note: str = "") -> None:
        print(f"{label:<52}{value:>14}  {note}")

    print(f"remote judge: System One stand-in on 127.0.0.1, {r['latency_s']:.2f} s per request;"
          f" {r['notes']} notes, {r['passages']} passages, {r['prompts']} fresh hook processes")
    line("requests per prompt", f"{r['requests_per_prompt']:.1f}",
         f"one after another: {r['one_after_another_s']:.1f} s")
    line("prompt-path wait (audit line), p50 / p95",
         f"{r['wait_p50_s']:.3f} / {r['wait_p95_s']:.3f} s", f"p95 <= {r['target_wait_p95_s']} s")
    line("hook process wall time, p50 / p95",
         f"{r['process_p50_s']:.3f} / {r['process_p95_s']:.3f} s",
         f"CPU p50 {r['process_cpu_p50_s']:.3f} s")
    line("prompts where the answering passage was added", f"{r['answer_added']}/{r['prompts']}")
    line("load average (1 min)", f"{r['load_average_1m']:.1f}", f"on {r['cpus']} CPUs")
    for error in r["errors"]:
        print("  error:", error)
