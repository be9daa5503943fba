"""`memsift bench FILE...`: replay labelled conversations through the real hook, as the host
would call it, and score what was added (the benchmark format and its scores: FORMAT.md of
the benchmark data).

Conversation files: every turn is a fresh `python -m memsift hook claude-code
UserPromptSubmit` process fed the host's stdin JSON, with a transcript file in Claude Code's
format that grows as the session does (the user line before the hook, the reply after).
MEMSIFT_HOME is a temporary folder holding the file's notes and memory, MEMSIFT_NOW the file's
`now`. `--baseline` replays the same turns the way the official Cognee plugin works: every
message of 5+ characters searches the store and gets the top 5 passages, no judging.

Retrieval files (`queries` instead of `turns`): search + per-passage judging run in this
process for each query (no hook: there are no messages to classify).

`--judge-backend NAME` replays every file twice, in fresh homes: with that decision-model
backend (as configured: judge.base_url, judge.api_key, judge.model) and with the local judge,
so the two rows of the table come from the same files on the same machine.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memsift.bench import environ
from memsift.bench.scoring import items_added
from memsift.paths import get_paths

HOOK_TIMEOUT_S = 30.0  # a hung hook is a failed turn, not a hung benchmark
STOP_WAIT_S = 5.0  # the warm server removes its files as it exits: its folder goes after it
BASELINE_MIN_CHARS = 5  # the official plugin skips shorter messages
BASELINE_TOP_K = 5  # ...and injects its top 5 recall results
SESSION_ID = "bench-replay"


@dataclass
class TurnResult:
    index: int
    kind: str
    expect: list[str]
    added: list[str]  # ids counted as added (the 60% rule)
    chars: int
    wait_s: float
    lost: str = ""  # where the answer was lost (memsift.audit.LOST_STAGES), when it was

    @property
    def found(self) -> bool:
        return bool(set(self.added) & set(self.expect))


@dataclass
class ConversationScore:
    name: str
    mode: str  # memsift | baseline
    turns: list[TurnResult] = field(default_factory=list)

    def summary(self) -> dict:
        waits = sorted(t.wait_s for t in self.turns)
        expected = [t for t in self.turns if t.expect]
        empty = [t for t in self.turns if not t.expect]
        return {
            "file": self.name, "mode": self.mode, "turns": len(self.turns),
            "added": sum(1 for t in self.turns if t.chars),
            "characters": sum(t.chars for t in self.turns),
            "wait_mean_s": round(sum(waits) / len(waits), 4) if waits else 0.0,
            "wait_p95_s": round(percentile(waits, 95), 4),
            "added_for_nothing": sum(1 for t in empty if t.chars),
            "expect_empty": len(empty),
            "reminders_found": sum(1 for t in expected if t.found),
            "expect_some": len(expected),
            "wrong_items": sum(len(set(t.added) - set(t.expect)) for t in self.turns),
            "lost": lost_counts(self.turns) if self.mode != "baseline" else {},
        }


def lost_counts(turns: list[TurnResult]) -> dict[str, int]:
    """The turns whose answer was not added, by where it was lost (their prompts' audit
    lines; "unknown" when a hook wrote none)."""
    from memsift.audit import LOST_STAGES

    counts = dict.fromkeys((*LOST_STAGES, "unknown"), 0)
    for turn in turns:
        if turn.expect and not turn.found:
            counts[turn.lost or "unknown"] += 1
    return counts


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return sorted_values[int(rank) - 1]


# --- environment of one replay -----------------------------------------------------------


def memsift_home(home: Path, now: str = ""):
    """MEMSIFT_HOME (and MEMSIFT_NOW) for this process, restored afterwards."""
    return environ(MEMSIFT_HOME=str(home), **({"MEMSIFT_NOW": now} if now else {}))


def prepare(data: dict, workdir: Path, longterm: str):
    """A project folder and a home holding the file's notes and memory and the models'
    caches; returns (settings, project root)."""
    from memsift.config import load_settings
    from memsift.memory.importer import import_data
    from memsift.model.caches import prepare as prepare_models

    project = workdir / "project"
    (project / ".git").mkdir(parents=True)
    settings = load_settings(_longterm_flags(longterm))
    import_data(data, settings, project)
    prepare_models(settings.paths.cache_dir)  # as set-up does: hooks open them, not make them
    return settings, project


def hook_env(longterm: str) -> dict:
    """The hook processes' environment: this one, minus a Cognee server when the replay is
    on the embedded store."""
    env = dict(os.environ)
    if longterm != "cognee":
        env.pop("MEMSIFT_COGNEE_URL", None)
    return env


def _longterm_flags(longterm: str) -> dict:
    if longterm == "cognee" and not os.environ.get("MEMSIFT_COGNEE_URL"):
        raise SystemExit("--longterm cognee needs MEMSIFT_COGNEE_URL (a running Cognee server)")
    return {} if longterm == "cognee" else {"cognee.url": ""}


# --- the transcript, in Claude Code's format ---------------------------------------------


class Transcript:
    def __init__(self, path: Path, cwd: Path) -> None:
        self.path = path
        self.cwd = cwd
        path.write_text("", encoding="utf-8")

    def _append(self, line: dict) -> None:
        line.update({"sessionId": SESSION_ID, "cwd": str(self.cwd)})
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")

    def user(self, text: str) -> None:
        self._append({"type": "user", "message": {"role": "user", "content": text}})

    def assistant(self, text: str) -> None:
        self._append({"type": "assistant", "message": {
            "role": "assistant", "content": [{"type": "text", "text": text}]}})


def hook_payload(prompt: str, transcript: Transcript, index: int) -> bytes:
    return json.dumps({
        "session_id": SESSION_ID, "transcript_path": str(transcript.path),
        "cwd": str(transcript.cwd), "prompt_id": f"p{index}", "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit", "prompt": prompt,
    }).encode("utf-8")


def added_context(stdout: str) -> str:
    """What the hook added, from either of the output forms Claude Code accepts."""
    text = stdout.strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        specific = data.get("hookSpecificOutput") or {}
        return str(specific.get("additionalContext", ""))
    return text


def stop_warm(env: dict) -> None:
    """The replay's warm server (memsift.warm) goes with its home."""
    from memsift import warm

    warm.stop(env, wait_s=STOP_WAIT_S)


def run_hook(prompt: str, transcript: Transcript, index: int, env: dict) -> tuple[str, float]:
    """One fresh hook process, timed from spawn to exit."""
    begin = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memsift", "hook", "claude-code", "UserPromptSubmit"],
            input=hook_payload(prompt, transcript, index), capture_output=True, env=env,
            cwd=transcript.cwd, timeout=HOOK_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return "", time.perf_counter() - begin
    wait = time.perf_counter() - begin
    return added_context(done.stdout.decode("utf-8", errors="replace")), wait


# --- conversation files ------------------------------------------------------------------


def replay_conversation(data: dict, longterm: str, baseline: bool, progress=None,
                        backend: str = "") -> list[ConversationScore]:
    """The file through the hook; with `backend`, that decision model's (the mode says it)."""
    with tempfile.TemporaryDirectory(prefix="memsift-bench-") as tmp:
        workdir = Path(tmp)
        home = workdir / "home"
        with memsift_home(home, data.get("now", "")):
            settings, project = prepare(data, workdir, longterm)
            env = hook_env(longterm) | ({"MEMSIFT_JUDGE_BACKEND": backend} if backend else {})
            try:
                scores = [_replay_hook(data, project, workdir, env, progress)]
            finally:
                stop_warm(env)
            if backend:
                scores[0].mode = backend
            if baseline:
                scores.append(_replay_baseline(data, settings, project, progress))
    return scores


def _catalogue(data: dict) -> dict[str, str]:
    return {str(x["id"]): x["text"] for x in (data.get("notes") or []) + (data.get("memory") or [])}


def _replay_hook(data, project, workdir, env, progress) -> ConversationScore:
    catalogue = _catalogue(data)
    transcript = Transcript(workdir / "transcript.jsonl", project)
    score = ConversationScore(data.get("name", "?"), "memsift")
    audit = get_paths().audit_file
    for index, turn in enumerate(data["turns"], start=1):
        transcript.user(turn["user"])
        before = _size(audit)
        added, wait = run_hook(turn["user"], transcript, index, env)
        transcript.assistant(turn.get("assistant", ""))
        result = _turn_result(index, turn, added, wait, catalogue)
        result.lost = _lost(result, audit, before)
        score.turns.append(result)
        _advance(progress)
    return score


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lost(result: TurnResult, audit: Path, before: int) -> str:
    """Where this turn's answer was lost, from the line its hook wrote ("" when found, or
    when the hook wrote no line: a crash or a timeout)."""
    from memsift.audit import furthest_stage, read_audit, where_lost

    if not result.expect or result.found or _size(audit) <= before:
        return ""
    last = read_audit(1, path=audit)
    if not last:
        return ""
    got = {str(i.get("id")) for i in last[0].get("added") or []}
    return furthest_stage(where_lost(last[0], result.expect, got))


def _replay_baseline(data, settings, project, progress) -> ConversationScore:
    """What the official Cognee plugin does, on our store: search, top 5, no judging."""
    from memsift.clock import Deadline
    from memsift.longterm import get_store

    store = get_store(settings, project)
    store.search("warm up", 1, Deadline(60.0))  # the model load is not a search's cost
    catalogue = _catalogue(data)
    score = ConversationScore(data.get("name", "?"), "baseline")
    for index, turn in enumerate(data["turns"], start=1):
        added, wait = "", 0.0
        if len(turn["user"].strip()) >= BASELINE_MIN_CHARS:
            begin = time.perf_counter()
            passages = store.search(turn["user"], BASELINE_TOP_K, Deadline(60.0))
            added = render_baseline(passages)
            wait = time.perf_counter() - begin
        score.turns.append(_turn_result(index, turn, added, wait, catalogue))
        _advance(progress)
    return score


def render_baseline(passages) -> str:
    """The plugin's shape: a header and every recall result, unfiltered."""
    if not passages:
        return ""
    lines = ["Relevant memories from Cognee:"]
    lines += [f"{n}. {p.text}" for n, p in enumerate(passages, start=1)]
    return "\n".join(lines)


def _turn_result(index, turn, added: str, wait: float, catalogue) -> TurnResult:
    return TurnResult(index, turn.get("kind", ""), list(turn.get("expect") or []),
                      items_added(added, catalogue), len(added), wait)


def _advance(progress) -> None:
    if progress is not None:
        progress.advance()


# --- retrieval files ---------------------------------------------------------------------


@dataclass
class RetrievalScore:
    name: str
    answerable: int = 0
    evidence_found: int = 0
    unanswerable: int = 0
    nothing_kept: int = 0
    passages: int = 0
    characters: int = 0
    waits: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        data = asdict(self)
        waits = sorted(data.pop("waits"))
        data["file"] = data.pop("name")
        data["evidence_found_rate"] = round(self.evidence_found / max(1, self.answerable), 4)
        data["nothing_kept_rate"] = round(self.nothing_kept / max(1, self.unanswerable), 4)
        data["wait_mean_s"] = round(sum(waits) / len(waits), 4) if waits else 0.0
        data["wait_p95_s"] = round(percentile(waits, 95), 4)
        return data


def replay_retrieval(data: dict, longterm: str, progress=None,
                     backend: str = "") -> RetrievalScore:
    from memsift.prompt.cascade import recall

    name = data.get("name", "?")
    score = RetrievalScore(f"{name} ({backend})" if backend else name)
    with tempfile.TemporaryDirectory(prefix="memsift-bench-") as tmp, \
            memsift_home(Path(tmp) / "home", data.get("now", "")), \
            environ(**({"MEMSIFT_JUDGE_BACKEND": backend} if backend else {})):
        settings, project = prepare({"memory": data.get("memory") or []}, Path(tmp), longterm)
        for query in data["queries"]:
            begin = time.perf_counter()
            items = recall(query["q"], settings, project)
            score.waits.append(time.perf_counter() - begin)
            _score_query(score, query, items)
            _advance(progress)
    return score


def _score_query(score: RetrievalScore, query: dict, items) -> None:
    expect = set(query.get("expect") or [])
    kept = {i.id for i in items}
    score.passages += len(items)
    score.characters += sum(len(i.text) for i in items)
    if expect:
        score.answerable += 1
        score.evidence_found += bool(kept & expect)
    else:
        score.unanswerable += 1
        score.nothing_kept += not kept


# --- the command ---------------------------------------------------------------------------


def main(files: list[str], baseline: bool = False, longterm: str = "embedded",
         as_json: bool = False, judge_backend: str = "") -> dict:
    from memsift.bench.report import Progress, print_report

    loaded = [(Path(f), json.loads(Path(f).read_text(encoding="utf-8"))) for f in files]
    backends = [judge_backend, "local"] if judge_backend and judge_backend != "local" else [""]
    total = sum(_steps(data, baseline) for _, data in loaded) * len(backends)
    conversations: list[ConversationScore] = []
    retrievals: list[RetrievalScore] = []
    with Progress(total, enabled=True) as progress:
        for (path, data), backend in itertools.product(loaded, backends):
            progress.describe(f"{path.name} {backend}".strip())
            if "queries" in data:
                retrievals.append(replay_retrieval(data, longterm, progress, backend))
            else:
                conversations.extend(replay_conversation(
                    data, longterm, baseline and backend in ("", "local"), progress, backend))
    report = build_report(conversations, retrievals, baseline)
    print_report(report, as_json)
    return report


def _steps(data: dict, baseline: bool) -> int:
    if "queries" in data:
        return len(data["queries"])
    return len(data.get("turns") or []) * (2 if baseline else 1)


def build_report(conversations, retrievals, baseline: bool) -> dict:
    report: dict = {"conversations": [c.summary() for c in conversations],
                    "retrieval": [r.summary() for r in retrievals]}
    modes = dict.fromkeys(c.mode for c in conversations)  # in the order they ran
    for mode in modes:
        scores = [c for c in conversations if c.mode == mode]
        if scores:
            report.setdefault("total", {})[mode] = total_of(scores, mode)
    if baseline:
        report["note"] = ("baseline: the official Cognee plugin's policy (every message of 5+ "
                          "characters, top 5 passages, no judging) run on this store in-process; "
                          "its wait is this store's search only, the plugin's own waits "
                          "(seconds of HTTP calls) are not reproduced")
    if retrievals:
        report["retrieval_note"] = "retrieval files: search + judging run in-process per query"
    return report


def total_of(scores: list[ConversationScore], mode: str) -> dict:
    """All files' turns together (the waits' mean and p95 over every turn)."""
    merged = ConversationScore("total", mode, [t for s in scores for t in s.turns])
    out = merged.summary()
    out["files"] = len(scores)
    return out
