"""Fine-tune the session end's keep cross-encoder on the labelled corpus, with JAX on CPU.

    make train-keep-cross   # or: python -m memsift.training.keep_cross [--steps N] [--out FILE]

The same network and training as the prompt path's cross-encoder (training/cross.py): MiniLM's
first layers and a head on the mean of the last layer, read here over one exchange,
`[CLS] message [SEP] reply [SEP]` (memsift.model.cross.keep_ids), labelled with the corpus's
`keep`. The keep head's vectors see the message and the reply apart; reading them together
lets attention find "the root cause was", "because", "never" next to the names they bind.

Trained on the train sessions of every project except those training/judge.py holds apart to
tune (tune_project): the keep trainer (memsift.judge.train_keep) stacks this model's score on
its own there, where this model has not seen the exchanges. Writes fp16 weights to
memsift/data/keep_cross.npz and their provenance beside them in keep_cross.json.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from memsift.judge.corpus import CORPUS, Turn, corpus_hash, read_corpus
from memsift.model.cross import KEEP_CROSS_FILE, keep_ids
from memsift.training.cross import LAYERS, fit

STEPS = 1200  # ~3 passes over the ~6,500 exchanges of the fit projects
POSITIVE_WEIGHT = 2.0  # about one exchange in six is kept


def examples(turns: list[Turn]) -> list[tuple[list[int], list[int], float]]:
    rows = []
    for turn in turns:
        if turn.keep is None:
            continue
        ids, types = keep_ids(turn.user, turn.assistant)
        rows.append((ids, types, 1.0 if turn.keep else 0.0))
    return rows


def train(steps: int = STEPS, out: Path = KEEP_CROSS_FILE, corpus_root: Path = CORPUS) -> dict:
    from memsift.judge.corpus import tune_project

    started = time.time()
    turns = list(read_corpus((corpus_root,)))
    rows = examples([t for t in turns if t.split == "train" and not tune_project(t.project)])
    fit(rows, steps, out, positive_weight=POSITIVE_WEIGHT)
    record = {"command": f"python -m memsift.training.keep_cross --steps {steps}",
              "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "corpus_sha256": corpus_hash((corpus_root,)),
              "weights_sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
              "layers": LAYERS, "steps": steps, "exchanges": len(rows),
              "kept": int(sum(r[2] for r in rows)), "seconds": round(time.time() - started)}
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def main(argv: list[str]) -> int:
    steps = int(argv[argv.index("--steps") + 1]) if "--steps" in argv else STEPS
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else KEEP_CROSS_FILE
    print(json.dumps(train(steps, out), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
