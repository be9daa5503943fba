"""Fine-tune the kind encoder (memsift/model/cross.py, KIND_FILE) on the labelled corpus, with
JAX on CPU.

    make train-kinds   # or: python -m memsift.training.kind_encoder [--steps N] [--layers N] [--out FILE]

The linear kind head over frozen MiniLM vectors (training/judge.py) read the corpus's
validation messages right on 54% of kinds and 81% of search / no search: the words that tell
"how should the % be formatted?" (builds on what exists) from "format it as a percentage" (an
instruction) weigh little in a sentence vector. This encoder reads the message with the turn
before it, `[CLS] message [SEP] reply before [SEP] user before [SEP]`, through MiniLM's first
layers, fine-tuned; its head has twelve outputs: the eleven kinds' logits and one for whether
the turn needs memory at all (the corpus's turns that expect an item). Trained on the fit
projects' turns and the hand-written kinds.jsonl (its train rows, as messages with no turn
before, for which the need output is not trained); the tune projects stay apart, so the
judge's stack (training/judge.py) is fitted on outputs of turns this encoder never saw.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from memsift.judge.base import KINDS
from memsift.judge.corpus import CORPUS, Turn
from memsift.model.cross import KIND_FILE, kind_ids
from memsift.training.cross import (
    arguments,
    command,
    fit_turns,
    initial_params,
    logits,
    optimizer,
    outputs,
    row_batches,
    run_steps,
    write_record,
)

STEPS = 1200  # ~4 passes over the ~9,200 rows of the fit projects (the shipped command)
KIND_LAYERS = 6  # all of MiniLM: kinds 0.647 and search 0.875 on validation, 3 layers 0.616 / 0.863
BATCH = 32
LR = 1e-4
HEAD_LR = 1e-3
WARMUP = 60
HAND_REPEAT = 3  # kinds.jsonl's rows define the eleven by example (as KINDS_FILE_WEIGHT)
NEED_WEIGHT = 1.0  # the need output's share of the loss
OUTPUTS = len(KINDS) + 1


def turn_ids(turn: Turn) -> tuple[list[int], list[int]]:
    """The encoder's input for a corpus turn, as LocalJudge builds it from set_turns."""
    before = turn.before[-1][0] if turn.before else ""
    return kind_ids(turn.user, turn.reply_before, before)


def rows_of(turns: list[Turn]) -> list[tuple[list[int], list[int], tuple[int, float, float]]]:
    """(ids, type ids, (kind, needs memory, need counted)) for the turns and the hand rows."""
    from memsift.judge.train_kinds import read_jsonl

    rows = []
    for turn in turns:
        ids, types = turn_ids(turn)
        rows.append((ids, types, (KINDS.index(turn.kind), float(bool(turn.expect)), 1.0)))
    for row in read_jsonl("kinds.jsonl"):
        if row["split"] == "train":
            ids, types = kind_ids(row["text"], "", "")
            rows += [(ids, types, (KINDS.index(row["kind"]), 0.0, 0.0))] * HAND_REPEAT
    return rows


def fit(rows, steps: int, out: Path, layers: int = KIND_LAYERS) -> None:
    import jax.numpy as jnp
    import optax

    print(f"rows: {len(rows)}", flush=True)
    params = {k: jnp.asarray(v) for k, v in initial_params(OUTPUTS, layers).items()}

    def loss(p, words, types, mask, labels):
        out = logits(p, words, types, mask)
        kind = labels[:, 0].astype(jnp.int32)
        kind_loss = optax.softmax_cross_entropy_with_integer_labels(out[:, :len(KINDS)], kind)
        need_loss = optax.sigmoid_binary_cross_entropy(out[:, len(KINDS)], labels[:, 1])
        return jnp.mean(kind_loss + NEED_WEIGHT * labels[:, 2] * need_loss)

    run_steps(row_batches(rows, BATCH), steps, out, params,
              optimizer(params, steps, LR, HEAD_LR, WARMUP), loss)


def predict(turns: list[Turn], path: Path = KIND_FILE) -> np.ndarray:
    """The encoder's outputs for corpus turns (JAX, the same forward as the hook's numpy):
    (turns, 12), the kinds' logits then the need logit."""
    return outputs(path, [(*turn_ids(t), 0.0) for t in turns])


def train(steps: int = STEPS, out: Path = KIND_FILE, layers: int = KIND_LAYERS,
          corpus_root: Path = CORPUS) -> dict:
    started = time.time()
    rows = rows_of(fit_turns(corpus_root))
    fit(rows, steps, out, layers)
    return write_record(out, command("memsift.training.kind_encoder", steps, layers),
                        corpus_root, steps, started, rows=len(rows))


def main(argv: list[str]) -> int:
    import json

    print(json.dumps(train(*arguments(argv, STEPS, KIND_FILE, KIND_LAYERS)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
