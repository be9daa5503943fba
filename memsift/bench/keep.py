"""`memsift bench --keep`: the session end's keep decision on whole labelled sessions.

Every validation session of the corpus (corpus/sessions and corpus/keep-sessions, split
"val": projects the head never trained on) goes through the same decision as SessionEnd
(memsift.session_end.decide.decide), with the session's notes and passages as what the project
held. Printed: per exchange, the precision and recall of the notes written against the
corpus's `keep` labels (those of corpus/keep-labels.jsonl, one rule in one pass, and for
comparison the session writers' own); notes per 80 turns; notes that repeat an item already
held (the exchange's `restates` or `expect` names one); and how much of each labelled `fact`
the composed note carries (content words).

`memsift bench --session-end FILE...` replays conversation files (the benchmark's format)
as one transcript each through the real SessionEnd hook, in a temporary home holding the
file's notes and memory, and lists the notes the worker wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TURNS_PER_SESSION = 80  # the unit the issue counts notes in: one long working session
TARGET_PRECISION = 0.8  # a note for nothing is a same-subject distractor on every prompt after
TARGET_RECALL = 0.8  # a missed note is work redone when the subject comes back
MAX_NOTES_PER_80 = 20
WORKER_WAIT_S = 300.0  # the worker embeds the whole session on a loaded machine


@dataclass
class KeepScore:
    exchanges: int = 0
    labelled: int = 0
    written: int = 0
    right: int = 0
    restating: int = 0
    reinforced: int = 0
    fact_precision: list[float] = field(default_factory=list)
    fact_recall: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        def mean(values: list[float]) -> float:
            return round(sum(values) / len(values), 3) if values else 0.0

        return {
            "exchanges": self.exchanges, "to_keep": self.labelled, "notes": self.written,
            "precision": round(self.right / max(1, self.written), 3),
            "recall": round(self.right / max(1, self.labelled), 3),
            "notes_per_80_turns": round(TURNS_PER_SESSION * self.written
                                        / max(1, self.exchanges), 1),
            "notes_restating_held": self.restating, "reinforced": self.reinforced,
            "fact_word_precision": mean(self.fact_precision),
            "fact_word_recall": mean(self.fact_recall),
        }


def _fact_overlap(score: KeepScore, written: str, label: str) -> None:
    from memsift.model.lexical import content_words

    got, want = content_words(written), content_words(label)
    if got and want:
        score.fact_precision.append(len(got & want) / len(got))
        score.fact_recall.append(len(got & want) / len(want))


def decide_session(turns, vectors) -> list:
    """One labelled session through the session end's decision: a decision per exchange."""
    from memsift.session_end.decide import decide
    from memsift.session_end.exchange import Exchange, SessionView
    from memsift.session_end.held import LONGTERM, NOTES, HeldItem, ProjectMemory
    from memsift.session_end.keepers import OfflineKeeper

    items = [HeldItem(i.id, i.text, NOTES if i.source == "notes" else LONGTERM)
             for i in turns[0].items]
    memory = ProjectMemory(items, vectors([i.text for i in items]))
    exchanges = [Exchange(n, n, t.user, t.assistant,
                          tuple(t.before)) for n, t in enumerate(turns)]
    view = SessionView(exchanges, memory)
    for text in {s for t in turns for s in (t.user, t.assistant)}:
        view.vectors[text] = vectors([text])[0]
    return list(decide(view, exchanges, OfflineKeeper()))


def score_session(turns, decisions, score: KeepScore) -> None:
    """A session's decisions against its turns' labels."""
    from memsift.session_end.decide import ADD, SUPERSEDE

    for turn, decision in zip(turns, decisions):
        score.exchanges += 1
        score.labelled += bool(turn.keep)
        score.reinforced += decision.action == "reinforce"
        if decision.action not in (ADD, SUPERSEDE):
            continue
        score.written += 1
        score.right += bool(turn.keep)
        score.restating += bool(turn.restates | turn.expect)
        if turn.keep:
            _fact_overlap(score, decision.text, turn.fact)


def measure_corpus(split: str = "val") -> tuple[dict, dict]:
    """The decisions on every session of `split`, made once and scored twice: against the
    rule's labels (corpus/keep-labels.jsonl) and against the session writers' own."""
    from memsift.judge.corpus import CORPUS, Vectors, keep_roots, read_corpus
    from memsift.judge.train_keep import VECTOR_CACHE, sessions_of

    def sessions(keep_labels: bool) -> dict:
        return sessions_of([t for t in read_corpus(keep_roots(CORPUS), keep_labels=keep_labels)
                            if t.split == split and t.keep is not None])

    ruled, writers = sessions(True), sessions(False)
    vectors = Vectors(VECTOR_CACHE)
    vectors.fill(sorted({s for turns in ruled.values() for t in turns
                         for s in (t.user, t.assistant, *(i.text for i in t.items))}))
    scores = KeepScore(), KeepScore()
    started = time.perf_counter()
    for name, turns in ruled.items():
        decisions = decide_session(turns, vectors)
        score_session(turns, decisions, scores[0])
        score_session(writers[name], decisions, scores[1])
    ms = round(1000 * (time.perf_counter() - started) / max(1, scores[0].exchanges), 2)
    return tuple({**score.summary(), "sessions": len(ruled), "ms_per_exchange": ms}
                 for score in scores)


def measure_hand() -> dict:
    """The 72 hand-written single exchanges (memsift/data/keep_exchanges_hand.jsonl), never
    trained on, each alone with nothing held: a project's first session."""
    import numpy as np

    from memsift.judge import keep
    from memsift.model.embed import embed

    rows = keep.load_exchanges()
    head = keep.load_head()
    exchanges = [keep.SessionExchange(r.user, r.assistant) for r in rows]
    x = np.concatenate([keep.session_rows([e], keep.Held(), embed, head.restate)
                        for e in exchanges])
    probabilities, threshold = head.decide(x, exchanges, holds_nothing=True)
    predicted = probabilities >= threshold
    tp = sum(1 for r, p in zip(rows, predicted) if p and r.keep)
    return {"exchanges": len(rows), "to_keep": sum(r.keep for r in rows),
            "precision": round(tp / max(1, int(predicted.sum())), 3),
            "recall": round(tp / max(1, sum(r.keep for r in rows)), 3)}


def main(as_json: bool = False) -> dict:
    ruled, writers = measure_corpus()
    results = {"corpus_val": ruled, "hand": measure_hand(),
               "corpus_val_writers_labels": writers}
    if as_json:
        print(json.dumps({"keep": results}))
        return results
    val, hand = results["corpus_val"], results["hand"]
    writers = results["corpus_val_writers_labels"]
    print(f"keep, corpus val ({val['sessions']} sessions, {val['exchanges']} exchanges, "
          f"{val['to_keep']} to keep): precision {val['precision']:.3f} (target "
          f"{TARGET_PRECISION}), recall {val['recall']:.3f} (target {TARGET_RECALL})")
    print(f"  notes {val['notes']}, {val['notes_per_80_turns']} per 80 turns (at most "
          f"{MAX_NOTES_PER_80}); restating what was held: {val['notes_restating_held']}; "
          f"held notes reinforced: {val['reinforced']}")
    print(f"  fact content words: precision {val['fact_word_precision']:.3f}, "
          f"recall {val['fact_word_recall']:.3f}; {val['ms_per_exchange']} ms per exchange")
    print(f"  against the session writers' own labels ({writers['to_keep']} to keep): precision "
          f"{writers['precision']:.3f}, recall {writers['recall']:.3f}")
    print(f"keep, hand-written exchanges ({hand['exchanges']}, {hand['to_keep']} to keep): "
          f"precision {hand['precision']:.3f}, recall {hand['recall']:.3f}")
    return results


# --- the real SessionEnd hook on a conversation file ----------------------------------------

def read_conversations(files: list[str]) -> tuple[list[tuple[Path, dict]], list[str]]:
    """Each file read once: (path, data) for the conversation files (a JSON object with a list
    of turns), and the names of the others: a retrieval file has queries, not turns, and has
    no session to end."""
    loaded, bad = [], []
    for name in files:
        try:
            data = json.loads(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("turns"), list):
            loaded.append((Path(name), data))
        else:
            bad.append(name)
    return loaded, bad


def replay_session_end(path: Path, data: dict) -> dict:
    """The file's turns as one Claude Code transcript, then SessionEnd through the hook;
    returns the notes the worker wrote and which held item each one repeats, if any."""
    from memsift.bench import environ
    from memsift.bench.replay import SESSION_ID, Transcript, prepare

    with tempfile.TemporaryDirectory(prefix="memsift-keep-") as tmp:
        workdir = Path(tmp)
        env = {"MEMSIFT_HOME": str(workdir / "home"), "MEMSIFT_COGNEE_URL": ""}
        if data.get("now"):
            env["MEMSIFT_NOW"] = data["now"]
        with environ(**env):
            settings, project = prepare(data, workdir, "embedded")
            transcript = Transcript(workdir / "transcript.jsonl", project)
            for turn in data["turns"]:
                transcript.user(turn["user"])
                transcript.assistant(turn.get("assistant", ""))
            _hook_session_end(transcript, project)
            marker = _wait_done(settings, SESSION_ID)
            return {"file": Path(path).name, "turns": len(data["turns"]),
                    **_written(settings, project, data), "worker": marker}


def _hook_session_end(transcript, project: Path) -> None:
    from memsift.bench.replay import SESSION_ID

    payload = json.dumps({"session_id": SESSION_ID, "transcript_path": str(transcript.path),
                          "cwd": str(project), "hook_event_name": "SessionEnd",
                          "reason": "exit"}).encode()
    subprocess.run([sys.executable, "-m", "memsift", "hook", "claude-code", "SessionEnd"],
                   input=payload, capture_output=True, cwd=project, timeout=60, check=False)


def _wait_done(settings, session_id: str) -> dict:
    from memsift.session_end.worker import done_marker

    marker = done_marker(settings.paths.data_dir, session_id)
    end = time.monotonic() + WORKER_WAIT_S
    while time.monotonic() < end:
        if marker.exists():
            return json.loads(marker.read_text(encoding="utf-8"))
        time.sleep(0.5)
    raise SystemExit(f"the session-end worker did not finish in {WORKER_WAIT_S:.0f} s")


def _written(settings, project: Path, data: dict) -> dict:
    """The notes the session wrote, each with the held item it repeats (restatement head)."""
    from memsift.judge import keep
    from memsift.memory.lifecycle import visible
    from memsift.memory.notes import NotesFile, notes_path
    from memsift.model.embed import embed
    from memsift.model.lexical import content_words

    notes = NotesFile(notes_path(settings, project)).read()
    held_ids = {str(n["id"]) for n in data.get("notes") or []}
    new = [n for n in visible(notes) if n.key not in held_ids]
    items = (data.get("notes") or []) + (data.get("memory") or [])
    held = keep.Held.of([i["text"] for i in items], embed([i["text"] for i in items]))
    head = keep.load_head()
    rows = []
    for note in new:
        vector = embed([note.text])[0]
        scores = head.restate_probability(keep.restate_pairs(vector, vector,
                                                             content_words(note.text), held))
        best = int(scores.argmax()) if len(scores) else -1
        repeats = items[best]["id"] if best >= 0 and scores[best] >= head.restate_threshold else ""
        rows.append({"text": note.text, "wip": note.meta.get("wip", ""), "repeats": repeats})
    return {"notes": rows, "notes_per_80_turns": round(
        TURNS_PER_SESSION * len(rows) / max(1, len(data["turns"])), 1),
        "restating": sum(1 for r in rows if r["repeats"])}


def main_session_end(loaded: list[tuple[Path, dict]], as_json: bool = False) -> list[dict]:
    """Replay each (path, data) of read_conversations and print the notes written."""
    results = [replay_session_end(path, data) for path, data in loaded]
    if as_json:
        print(json.dumps({"session_end": results}))
        return results
    for result in results:
        print(f"{result['file']}: {len(result['notes'])} notes for {result['turns']} turns "
              f"({result['notes_per_80_turns']} per 80, at most {MAX_NOTES_PER_80}); "
              f"restating a held item: {result['restating']}")
        for row in result["notes"]:
            mark = f" [repeats {row['repeats']}]" if row["repeats"] else ""
            print(f"  - {row['text']}{mark}")
    return results
