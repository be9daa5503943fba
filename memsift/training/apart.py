"""Check that what memsift trains on was written apart from the files that judge it.

    python -m memsift.training.apart HELD [HELD...]   # files or folders of benchmark JSON

Reads the messages, notes, passages and facts of the training data (corpus/sessions, corpus/keep-sessions, the keep
labels, corpus/cross-pairs and memsift/data's hand-written jsonl files, and corpus/held-pairs, the
chit-chat groups the cross-encoder is checked on) and of the held files, and reports each
training text that is a held text word for word, or that shares runs of RUN words with one: a
reworded copy. A run is allowed when an entry of corpus/apart-allowed.txt holds it (a platform's
own error message, a tool's command line: text every project quotes the same way). Exits 1 when
anything is reported. Reading the held files here is a check, never training.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memsift.judge.corpus import (
    CORPUS,
    REPO,
    cross_pair_files,
    held_pair_files,
    keep_labels_file,
    keep_roots,
    session_files,
)

RUN = 6  # words in a row: shorter runs are everyday phrases ("let me know if you")
MIN_RUNS = 2  # shared runs that make a reworded copy (one alone is a common phrase)
MIN_EXACT = 4  # words: shorter texts ("thanks", "yes do that") are every session's
ALLOWED = REPO / "corpus" / "apart-allowed.txt"
# What a person or a project wrote: messages, notes, passages, questions, facts. Labels ("why",
# "kind") and replies are left out: their stock phrases ("nothing in the notes or memory says")
# recur in any two sets written to one format.
CONTENT = frozenset({"user", "text", "q", "question", "message", "answer", "same_subject",
                     "fact", "kept"})
DATA_FILES = ("kinds.jsonl", "item_pairs.jsonl", "worth.jsonl", "keep_exchanges.jsonl",
              "keep_exchanges_hand.jsonl")


@dataclass(frozen=True)
class Overlap:
    source: str  # the training file, relative to the repository
    text: str
    held: str  # the held text it copies
    runs: tuple[str, ...]  # the shared runs not allowed; empty for a word-for-word copy


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def phrase(text: str) -> str:
    """The text's words joined by single spaces: what two texts are compared by."""
    return " ".join(words(text))


def runs_of(text: str, size: int = RUN) -> set[str]:
    w = words(text)
    return {" ".join(w[i:i + size]) for i in range(len(w) - size + 1)}


def strings(value, inside: bool = False) -> Iterator[str]:
    """The content strings inside a JSON value: those under a CONTENT key, at any depth."""
    if isinstance(value, str):
        if inside:
            yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, inside or key in CONTENT)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, inside)


def file_strings(path: Path) -> Iterator[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        for line in text.splitlines():
            if line.strip():
                yield from strings(json.loads(line))
    else:
        yield from strings(json.loads(text))


def training_files(corpus: Path = CORPUS) -> list[Path]:
    data = [REPO / "memsift" / "data" / name for name in DATA_FILES]
    others = [p for p in [keep_labels_file(corpus), *cross_pair_files(corpus), *data,
                          *held_pair_files(corpus)]
              if p.is_file()]
    return session_files(keep_roots(corpus)) + others


def held_files(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    return found


def allowed_runs(path: Path = ALLOWED) -> list[str]:
    """The allowed entries, each as its words joined by single spaces."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [phrase(line) for line in lines if line.strip() and not line.startswith("#")]


def overlaps(training: Iterable[tuple[str, str]], held: Iterable[str],
             allowed: list[str]) -> list[Overlap]:
    """(source, text) pairs of the training data against the held texts."""
    whole: dict[str, str] = {}
    by_run: dict[str, str] = {}
    for text in held:
        if len(words(text)) >= MIN_EXACT:
            whole.setdefault(phrase(text), text)
        for run in runs_of(text):
            by_run.setdefault(run, text)
    found = []
    for source, text in training:
        if phrase(text) in whole:
            found.append(Overlap(source, text, whole[phrase(text)], ()))
            continue
        shared = sorted(r for r in runs_of(text) if r in by_run and not _allowed(r, allowed))
        if len(shared) >= MIN_RUNS:
            found.append(Overlap(source, text, by_run[shared[0]], tuple(shared)))
    return found


def _allowed(run: str, allowed: list[str]) -> bool:
    """Whether an entry holds the run as whole words ("e of receiver" is not in "one of ...")."""
    return any(f" {run} " in f" {entry} " for entry in allowed)


def check(held_paths: Iterable[Path], corpus: Path = CORPUS,
          allowed: Path = ALLOWED) -> list[Overlap]:
    held = [s for path in held_files(held_paths) for s in file_strings(path)]
    training = [(str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path), s)
                for path in training_files(corpus) for s in file_strings(path)]
    return overlaps(training, held, allowed_runs(allowed))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    found = check([Path(a) for a in argv])
    for o in found:
        what = "word for word" if not o.runs else f"{len(o.runs)} runs: {o.runs[0]!r}"
        print(f"{o.source}: {o.text[:100]!r}\n    copies {o.held[:100]!r} ({what})")
    print(f"{len(found)} training texts copy a held text" if found else "apart: OK")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
