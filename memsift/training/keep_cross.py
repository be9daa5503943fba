"""Fine-tune the session end's keep cross-encoder on the labelled corpus, with JAX on CPU.

    make train-keep-cross   # or: python -m memsift.training.keep_cross [--steps N] [--out FILE]

The same network and training as the prompt path's cross-encoder (training/cross.py): MiniLM's
first layers and a head on the mean of the last layer, read here over one exchange,
`[CLS] message [SEP] reply [SEP] reply before [SEP]` (memsift.model.cross.keep_ids), labelled
with the corpus's `keep`. The keep head's vectors see the message and the reply apart; reading
them together lets attention find "the root cause was", "because", "never" next to the names
they bind.

Trained on the rule's labels (corpus/keep-labels.jsonl) of the train sessions and on the
keep-only sessions (corpus/keep-sessions), less the projects held apart to tune
(tune_project), and on the templated single exchanges of memsift/data/keep_exchanges.jsonl
counted three times, as the keep head counts them. The keep trainer (memsift.judge.train_keep)
stacks this model's score on the head's on the tune projects, which this model has not seen.
Writes int8 layers to memsift/data/keep_cross.npz and their provenance beside them in
keep_cross.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memsift.judge.corpus import CORPUS, Turn, keep_roots, read_corpus, tune_project
from memsift.judge.train_keep import EXTRA_COPIES, corpus_sha256
from memsift.model.cross import KEEP_CROSS_FILE, keep_ids
from memsift.training.cross import LAYERS, arguments, command, fit, write_record

STEPS = 2400  # ~3 passes over the ~12,000 exchanges of the fit projects and templates
POSITIVE_WEIGHT = 2.0  # about one exchange in eight is kept


def examples(turns: list[Turn]) -> list[tuple[list[int], list[int], float]]:
    rows = []
    for turn in turns:
        if turn.keep is None:
            continue
        ids, types = keep_ids(turn.user, turn.assistant, turn.reply_before)
        rows.append((ids, types, 1.0 if turn.keep else 0.0))
    return rows


def fit_turns(corpus_root: Path) -> list[Turn]:
    """The rule-labelled train sessions and keep-only sessions, less the tune projects."""
    return [t for t in read_corpus(keep_roots(corpus_root), keep_labels=True)
            if t.split == "train" and not tune_project(t.project)]


def templated() -> list[tuple[list[int], list[int], float]]:
    """The templated single exchanges, each alone (memsift/data/keep_exchanges.jsonl)."""
    from memsift.judge.keep import load_exchanges

    rows = []
    for exchange in load_exchanges("keep_exchanges.jsonl"):
        ids, types = keep_ids(exchange.user, exchange.assistant)
        rows.append((ids, types, float(exchange.keep)))
    return rows


def train(steps: int = STEPS, out: Path = KEEP_CROSS_FILE, layers: int = LAYERS,
          corpus_root: Path = CORPUS) -> dict:
    started = time.time()
    read = corpus_sha256(corpus_root, rule=True)  # what is read now, not what is there after
    rows = examples(fit_turns(corpus_root)) + templated() * EXTRA_COPIES
    fit(rows, steps, out, layers=layers, positive_weight=POSITIVE_WEIGHT)
    return write_record(out, command("memsift.training.keep_cross", steps, layers),
                        corpus_root, steps, started, exchanges=len(rows),
                        kept=int(sum(r[2] for r in rows)),
                        keep_corpus_sha256=read)


def main(argv: list[str]) -> int:
    print(json.dumps(train(*arguments(argv, STEPS, KEEP_CROSS_FILE)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
