"""Fine-tune the kind encoder (memsift/model/cross.py, KIND_FILE) on the labelled corpus, with
JAX on CPU.

    make train-kinds   # or: python -m memsift.training.kind_encoder [--steps N] [--out FILE]

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
from memsift.model.embed import get_model
from memsift.training.cross import (
    arguments,
    batch_arrays,
    fit_turns,
    initial_params,
    logits,
    previous_reply,
    save,
    write_record,
)

STEPS = 900  # ~3.6 passes over the ~8,000 rows
BATCH = 32
LR = 1e-4
HEAD_LR = 1e-3
WARMUP = 60
WEIGHT_DECAY = 0.01
HAND_REPEAT = 3  # kinds.jsonl's rows define the eleven by example (as KINDS_FILE_WEIGHT)
NEED_WEIGHT = 1.0  # the need output's share of the loss
SEED = 0
OUTPUTS = len(KINDS) + 1


def turn_ids(turn: Turn) -> tuple[list[int], list[int]]:
    """The encoder's input for a corpus turn, as LocalJudge builds it from set_turns."""
    before = turn.before[-1][0] if turn.before else ""
    return kind_ids(turn.user, previous_reply(turn), before)


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


def fit(rows, steps: int, out: Path) -> None:
    import jax
    import jax.numpy as jnp
    import optax

    started = time.time()
    print(f"rows: {len(rows)}", flush=True)
    model = get_model()
    params = {k: jnp.asarray(v) for k, v in initial_params(OUTPUTS).items()}

    def schedule(peak):
        return optax.join_schedules([optax.linear_schedule(0.0, peak, WARMUP),
                                     optax.linear_schedule(peak, 0.0, max(1, steps - WARMUP))],
                                    [WARMUP])

    opt = optax.multi_transform(
        {"layers": optax.adamw(schedule(LR), weight_decay=WEIGHT_DECAY),
         "head": optax.adamw(schedule(HEAD_LR), weight_decay=0.0)},
        {k: ("head" if k.startswith("head.") else "layers") for k in params})
    state = opt.init(params)

    def loss(p, words, types, mask, labels):
        out = logits(p, words, types, mask)
        kind = labels[:, 0].astype(jnp.int32)
        kind_loss = optax.softmax_cross_entropy_with_integer_labels(out[:, :len(KINDS)], kind)
        need_loss = optax.sigmoid_binary_cross_entropy(out[:, len(KINDS)], labels[:, 1])
        return jnp.mean(kind_loss + NEED_WEIGHT * labels[:, 2] * need_loss)

    @jax.jit
    def step(p, s, words, types, mask, labels):
        value, grads = jax.value_and_grad(loss)(p, words, types, mask, labels)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(rows))
    running = 0.0
    for number in range(steps):
        start = (number * BATCH) % len(rows)
        chunk = [rows[i] for i in order[start:start + BATCH]]
        if len(chunk) < BATCH:
            order = rng.permutation(len(rows))
            chunk = [rows[i] for i in order[:BATCH]]
        arrays = batch_arrays(chunk, model.word_q, model.word_scale)
        params, state, value = step(params, state, *arrays)
        running = 0.98 * running + 0.02 * float(value) if number else float(value)
        if number % 50 == 0 or number == steps - 1:
            print(f"  step {number}/{steps} loss {running:.4f} "
                  f"({time.time() - started:.0f} s)", flush=True)
        if number % 300 == 299:
            save(params, out)
    save(params, out)


def predict(turns: list[Turn], path: Path = KIND_FILE) -> np.ndarray:
    """The encoder's outputs for corpus turns (JAX, the same forward as the hook's numpy):
    (turns, 12), the kinds' logits then the need logit."""
    import jax
    import jax.numpy as jnp

    with np.load(path) as data:
        params = {k: jnp.asarray(data[k].astype(np.float32)) for k in data.files if k != "layers"}
    model = get_model()
    run = jax.jit(lambda w, t, m: logits(params, w, t, m))
    rows = [(*turn_ids(t), 0.0) for t in turns]
    out = []
    for start in range(0, len(rows), 64):
        words, types, mask, _ = batch_arrays(rows[start:start + 64], model.word_q,
                                             model.word_scale)
        out.append(np.asarray(run(jnp.asarray(words), jnp.asarray(types), jnp.asarray(mask))))
    return np.concatenate(out) if out else np.zeros((0, OUTPUTS), np.float32)


def train(steps: int = STEPS, out: Path = KIND_FILE, corpus_root: Path = CORPUS) -> dict:
    started = time.time()
    rows = rows_of(fit_turns(corpus_root))
    fit(rows, steps, out)
    return write_record(out, f"python -m memsift.training.kind_encoder --steps {steps}",
                        corpus_root, steps, started, rows=len(rows))


def main(argv: list[str]) -> int:
    import json

    print(json.dumps(train(*arguments(argv, STEPS, KIND_FILE)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
