"""The labelled corpus (corpus/ at the repository's root) as training examples.

Training and its benchmarks only; never on the prompt path. A session becomes one Turn per
message, with what the judge sees at run time: the message, the turns before it, the
project's notes and passages; and what it should decide: the kind, the items that answer,
the same-subject items that do not, whether the exchange is worth keeping and as what fact.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memsift.held import HELD_FRACTION, TAIL_CHARS, distinctive_words, share_held

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus" / "sessions"
KEEP_SESSIONS = "keep-sessions"  # beside a sessions folder: sessions only the keep decision trains on
CROSS_PAIRS = "cross-pairs"  # beside a sessions folder: (message, answer, near misses) groups only
#                              the cross-encoder trains on
HELD_PAIRS = "held-pairs"  # groups in that form never trained on: a check of the cross-encoder
OWN_SESSIONS = REPO / "bench" / "sessions"  # labelled like the corpus, without keep labels
KEEP_LABELS = "keep-labels.jsonl"  # beside a sessions folder: the keep labels of one rule, one pass
CONTEXT_TURNS = 2  # the turns before a message the judge reads with it
VECTOR_CACHE = REPO / ".cache" / "corpus-vectors.npz"  # the trainers' embeddings of the corpus
VECTORS_FORMAT = "alone"  # in the cache's keys: each vector as its text gets it alone (embed)
# A writer's "why" that says the session already gave the answer ("m04 was given in the
# previous turn", "discussed at turn 4"): such a turn's near items may well answer it.
ANSWERED_BEFORE = re.compile(r"already|given|earlier|previous|turn \d|this (session|conversation)"
                             r"|above|applied|just (said|told|gave)", re.IGNORECASE)


@dataclass(frozen=True)
class Item:
    id: str
    text: str
    source: str  # "notes" | "longterm"
    written: str = ""


@dataclass
class Turn:
    session: str
    project: str
    split: str
    index: int
    user: str
    assistant: str
    kind: str
    expect: frozenset[str]
    near: frozenset[str]
    keep: bool | None
    fact: str
    restates: frozenset[str]
    before: list[tuple[str, str]] = field(default_factory=list)  # (user, assistant), oldest first
    items: list[Item] = field(default_factory=list)  # the project's notes and passages
    why: str = ""  # the writer's one line on why a reminder is or is not called for
    # Items the cascade's conversation filter drops at this turn: the session's text before
    # it holds most of their distinctive words (memsift.held).
    held: frozenset[str] = frozenset()

    @property
    def reply_before(self) -> str:
        """The agent's reply just before this message ("" for a session's first)."""
        return self.before[-1][1] if self.before else ""

    @property
    def context(self) -> str:
        """The turn before, exactly as the judge reads it at run time (features.context_of)."""
        from memsift.judge.features import context_of

        roles = [(role, text) for user, assistant in self.before
                 for role, text in (("user", user), ("assistant", assistant))]
        return context_of(roles)


def session_files(roots: Iterable[Path] = (CORPUS,)) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        files += sorted(root.glob("*/*.json")) + sorted(root.glob("*.json"))
    return files


def split_of(data: dict) -> str:
    """The session's own split; sessions without one (bench/sessions) are split by a hash of
    their project, so a project never sits on both sides."""
    if data.get("split") in ("train", "val"):
        return data["split"]
    project = data.get("project") or data["name"]
    return "val" if int(hashlib.sha256(project.encode()).hexdigest(), 16) % 5 == 0 else "train"


def keep_roots(root: Path) -> tuple[Path, ...]:
    """The folders the keep decision reads for the corpus at `root`: root itself, and the
    keep-only sessions beside it when there are any (the prompt-path trainers never read
    those, so adding one leaves their corpus hash alone)."""
    extra = Path(root).parent / KEEP_SESSIONS
    return (Path(root), extra) if extra.is_dir() else (Path(root),)


def cross_pair_files(root: Path = CORPUS) -> list[Path]:
    """The cross-encoder's extra groups beside the sessions at `root` (none when absent)."""
    return sorted((Path(root).parent / CROSS_PAIRS).glob("*.jsonl"))


def held_pair_files(root: Path = CORPUS) -> list[Path]:
    """Groups in the cross-pairs' form that no trainer reads (bench --judge checks on them)."""
    return sorted((Path(root).parent / HELD_PAIRS).glob("*.jsonl"))


def read_cross_pairs(root: Path = CORPUS) -> list[dict]:
    """The groups of the cross-pair files beside the sessions at `root` (read_pair_files)."""
    return read_pair_files(cross_pair_files(root))


def read_pair_files(paths: Iterable[Path]) -> list[dict]:
    """Each group: {"project", "message", "reply_before", "answer", "near": [...]}; the answer
    answers the message read after reply_before, no near item does. Training data only: the
    projects are their own and never in the validation split."""
    return [row for path in paths for row in jsonl_rows(path)]


def stem(project: str) -> str:
    """A group's project without its number: "chat-arts-priya-mateo-07" -> its pair of
    friends, "chat-arts-priya-mateo", whose other groups are the same people's lines."""
    head, _, tail = project.rpartition("-")
    return head if head and tail.isdigit() else project


def answers_by_stem(groups: list[dict]) -> dict[str, list[str]]:
    """Each stem's answers, in the groups' order: the same people's answers to other questions."""
    by_stem: dict[str, list[str]] = {}
    for group in groups:
        by_stem.setdefault(stem(group["project"]), []).append(group["answer"])
    return by_stem


def jsonl_rows(path: Path) -> list[dict]:
    """A JSON-lines file's rows, blank lines skipped."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def cross_pairs_hash(root: Path = CORPUS) -> str:
    """sha256 over the cross-pair files' paths and bytes."""
    return files_hash(cross_pair_files(root))


def keep_labels_file(root: Path) -> Path:
    """Where the keep labels of the sessions under `root` are (they may not exist)."""
    return Path(root).parent / KEEP_LABELS


def read_keep_labels(path: Path) -> dict[str, dict]:
    """The keep labels file: one JSON line a session, {"session": "<domain>/<name>",
    "turns": N, "kept": {"<turn>": "<fact>", ...}}; the turns not in `kept` are not kept."""
    if not path.is_file():
        return {}
    return {row["session"]: row for row in jsonl_rows(path)}


def labels_key(path: Path) -> str:
    """A session's name in the keep labels file: its domain folder and file name."""
    return f"{path.parent.name}/{path.stem}"


def read_session(path: Path, labels: dict | None = None) -> list[Turn]:
    """One session's turns; with `labels` (its row of the keep labels file), each turn's keep
    and fact are the labels' instead of the ones written into the session."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if labels is not None and labels["turns"] != len(data["turns"]):
        raise ValueError(f"{path}: the keep labels name {labels['turns']} turns, the session "
                         f"has {len(data['turns'])}")
    kept = {int(n): fact for n, fact in (labels or {}).get("kept", {}).items()}
    items = ([Item(n["id"], n["text"], "notes", n.get("written", "")) for n in data["notes"]]
             + [Item(m["id"], m["text"], "longterm", m.get("written", ""))
                for m in data["memory"]])
    project = data.get("project") or data["name"]
    split = split_of(data)
    turns: list[Turn] = []
    history: list[tuple[str, str]] = []
    spoken = ""  # the session's text before the turn, as the conversation filter reads it
    item_words = {i.id: distinctive_words(i.text) for i in items}
    for index, raw in enumerate(data["turns"]):
        turns.append(Turn(
            session=data["name"], project=project, split=split, index=index,
            user=raw["user"], assistant=raw["assistant"], kind=raw["kind"],
            expect=frozenset(raw.get("expect", [])), near=frozenset(raw.get("near", [])),
            keep=(index in kept) if labels is not None else raw.get("keep"),
            fact=kept.get(index, "") if labels is not None else raw.get("fact", ""),
            restates=frozenset(raw.get("restates", [])),
            before=history[-CONTEXT_TURNS:], items=items, why=raw.get("why", ""),
            held=held_items(item_words, spoken)))
        history.append((raw["user"], raw["assistant"]))
        spoken = f"{spoken}\n{raw['user']}\n{raw['assistant']}"
    return turns


def held_items(item_words: dict[str, set[str]], spoken: str) -> frozenset[str]:
    """Ids of the items (each id with its distinctive words) the conversation filter drops
    after `spoken`, the session so far: the cascade's test on the same tail (memsift/held.py)."""
    words = distinctive_words(spoken[-TAIL_CHARS:]) if spoken else set()
    if not words:
        return frozenset()
    return frozenset(i for i, own in item_words.items() if share_held(own, words) >= HELD_FRACTION)


def answered_before(turn: Turn, item_id: str) -> bool:
    """Whether a near item of a turn that expects nothing may answer it all the same, the
    session having given it already: the conversation filter drops it at run time, or the
    writer says so. Such an item is no example of a same-subject item that does not answer,
    so the item models are not taught it as one (it is left out, not made an answer)."""
    return (not turn.expect and item_id in turn.near
            and (item_id in turn.held or bool(ANSWERED_BEFORE.search(turn.why))))


def read_corpus(roots: Iterable[Path] = (CORPUS,), keep_labels: bool = True
                ) -> Iterator[Turn]:
    """Every turn of the sessions under `roots`. `keep_labels`: where a keep labels file sits
    beside a root (corpus/keep-labels.jsonl), its labels replace those the session writers
    gave; False reads the writers' own."""
    for root in roots:
        labels = read_keep_labels(keep_labels_file(root)) if keep_labels else {}
        for path in session_files((root,)):
            yield from read_session(path, labels.get(labels_key(path)))


def corpus_hash(roots: Iterable[Path] = (CORPUS,)) -> str:
    """sha256 over the session files' paths and bytes: the data a model was trained on."""
    return files_hash(session_files(roots))


def files_hash(paths: Iterable[Path]) -> str:
    """sha256 over the files' paths (from the repository) and bytes, in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(REPO)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Vectors:
    """MiniLM vectors of the corpus's texts, cached on disk by text hash across runs."""

    def __init__(self, path: Path = VECTOR_CACHE) -> None:
        import numpy as np

        self.path = path
        self.table: dict = {}
        if path.exists():
            with np.load(path) as data:
                self.table = dict(zip((str(k) for k in data["keys"]), data["vecs"]))

    @staticmethod
    def key(text: str) -> str:
        from memsift.model.embed import MODEL_ID

        return hashlib.sha1(f"{MODEL_ID}\0{VECTORS_FORMAT}\0{text}".encode()).hexdigest()

    def fill(self, texts) -> None:
        import numpy as np

        from memsift.model.embed import embed

        # by length, then text: chunks of like lengths, the same chunks whatever set order gives
        missing = sorted({t for t in texts if self.key(t) not in self.table},
                         key=lambda t: (len(t), t))
        for start in range(0, len(missing), 256):
            chunk = missing[start:start + 256]
            for text, vector in zip(chunk, embed(chunk, alone=True)):
                self.table[self.key(text)] = vector
            print(f"  embedded {min(start + 256, len(missing))}/{len(missing)}",
                  file=sys.stderr, flush=True)  # stdout may be a benchmark's JSON
        if missing:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.table)
            np.savez(self.path, keys=np.asarray(keys), vecs=np.stack([self.table[k] for k in keys]))

    def __call__(self, texts):
        import numpy as np

        from memsift.model.embed import DIM

        if not texts:
            return np.zeros((0, DIM), np.float32)
        return np.stack([self.table[self.key(t)] for t in texts])

    def one(self, text: str):
        return self.table[self.key(text)]


TUNE_SHARE = 5  # one train project in this many is held apart to choose thresholds and stacks


def tune_project(project: str) -> bool:
    """Whether a train project is held apart to tune: thresholds and stacks are chosen on
    its sessions, which the models they combine were not fitted on."""
    return int(hashlib.sha256(project.encode()).hexdigest(), 16) % TUNE_SHARE == 0
