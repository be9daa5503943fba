"""Fine-tune the session end's keep cross-encoder on the labelled corpus, with JAX on CPU.

    make train-keep-cross   # or: python -m memsift.training.keep_cross [--steps N] [--out FILE]

The same network and training as the prompt path's cross-encoder (training/cross.py): MiniLM's
first layers and a head on the mean of the last layer, read here over one exchange,
`[CLS] message [SEP] reply [SEP]` (memsift.model.cross.keep_ids), labelled with the corpus's
`keep`. The keep head's vectors see the message and the reply apart; reading them together
lets attention find "the root cause was", "because", "never" next to the names they bind.

Trained on the train sessions of every project except those training/judge.py holds apart to
tune (tune_project): the keep trainer (memsift.judge.train_keep) stacks this model's score on
its own there, where this model has not seen the exchanges. Writes int8 layers to
memsift/data/keep_cross.npz and their provenance beside them in keep_cross.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memsift.judge.corpus import CORPUS, Turn
from memsift.model.cross import KEEP_CROSS_FILE, keep_ids
from memsift.training.cross import LAYERS, arguments, command, fit, fit_turns, write_record

STEPS = 1200  # ~3 passes over the ~6,500 exchanges of the fit projects
POSITIVE_WEIGHT = 2.0  # about one exchange in six is kept


def examples(turns: list[Turn]) -> list[tuple[list[int], list[int], float]]:
    rows = []
    for turn in turns:
        if turn.keep is None:
            continue
        ids, types = keep_ids(turn.user, turn.assistant, turn.reply_before)
        rows.append((ids, types, 1.0 if turn.keep else 0.0))
    return rows


def train(steps: int = STEPS, out: Path = KEEP_CROSS_FILE, layers: int = LAYERS,
          corpus_root: Path = CORPUS) -> dict:
    started = time.time()
    rows = examples(fit_turns(corpus_root))
    fit(rows, steps, out, layers=layers, positive_weight=POSITIVE_WEIGHT)
    return write_record(out, command("memsift.training.keep_cross", steps, layers),
                        corpus_root, steps, started, exchanges=len(rows),
                        kept=int(sum(r[2] for r in rows)))


def main(argv: list[str]) -> int:
    print(json.dumps(train(*arguments(argv, STEPS, KEEP_CROSS_FILE)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
