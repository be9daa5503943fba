"""Fine-tune the cross-encoder (memsift/model/cross.py) on the labelled corpus, with JAX on CPU.

    make train-cross   # or: python -m memsift.training.cross [--steps N] [--layers N] [--out FILE]
                       #         [--sessions-only] [--from FILE --pairs-repeat N
                       #          --group-negatives N] [--from FILE --listwise]

Starts from all-MiniLM-L6-v2's own first LAYERS layers, or --layers of its six (the weights
the embedding model ships), keeps its word embeddings frozen, and trains the layers and a head on [CLS] with
binary cross-entropy on the mean of the last layer: for every train turn (the projects training/judge.py holds apart to tune
its thresholds and the stacking excluded), the candidates the cascade would judge (the
nearest notes and passages), the items that answer it (1) and the same-subject items that do
not (0); and the groups of corpus/cross-pairs/ (a message, the note that answers it, its
near misses), patterns the sessions hold too few of. Writes int8 layers (memsift.model.cross.quantize), and their provenance beside them
in cross_encoder.json.

`make train-cross` trains on the sessions' pairs alone (--sessions-only: what ships). `make
train-cross-groups` continues from those weights (--from) on the sessions' pairs and the
groups together, the groups repeated (--pairs-repeat) so that a few thousand of them weigh
against ~59,000 session pairs, each group's message also read against other groups' answers
(--group-negatives). Its record holds the first stage's (`from`), so the chain is what the
provenance names. docs/decision-model.md gives what it measured and why it does not ship.
`--from FILE --listwise` continues on the sessions' turns whole, a softmax over each turn's
candidates beside the pointwise loss (fit_listwise): measured, not shipped either.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memsift.judge.corpus import (
    CORPUS,
    REPO,
    Turn,
    answered_before,
    answers_by_stem,
    corpus_hash,
    cross_pairs_hash,
    read_corpus,
    read_cross_pairs,
    stem,
)
from memsift.model.cross import CROSS_FILE, pair_ids, quantize, read_weights
from memsift.model.embed import DIM, HEADS, LN_EPS, get_model

LAYERS = 3  # half of MiniLM: ~130 ms for 8 pairs in a hook process, where 6 layers take ~270
PER_GROUP = 3  # nearest candidates per group besides the labelled ones
STEPS = 6000  # ~2 passes over the ~47,000 pairs of the fit projects: 1,100 and 3,000 left it short
BATCH = 16
LR = 1e-4  # the layers'
HEAD_LR = 1e-3  # the head starts at zero: at the layers' rate it took 300 steps to learn the prior
WARMUP = 100
WEIGHT_DECAY = 0.01
POSITIVE_WEIGHT = 2.0
BUCKETS = (64, 96, 128, 160)  # padded lengths: one compiled step each
SEED = 0
CONTINUE_LR = 5e-5  # a second stage starts from trained layers and a trained head: one rate, half
LISTWISE_WEIGHT = 1.0  # the per-turn softmax's share of the loss (--listwise)


def turn_examples(turns: list[Turn]) -> list[list[tuple[list[int], list[int], float]]]:
    """Per train turn, its rows: the candidates the cascade would judge (the nearest notes and
    passages), the items that answer it (1) and the same-subject items that do not (0)."""
    from memsift.judge.corpus import Vectors
    from memsift.training.judge import candidates, texts_of

    vectors = Vectors()
    vectors.fill(texts_of(turns))
    out = []
    for turn in turns:
        picked: dict[str, object] = {}
        for group in candidates(turn, vectors):
            for item in group[:PER_GROUP]:
                picked[item.id] = item
        for item in turn.items:
            if item.id in turn.expect or item.id in turn.near:
                picked[item.id] = item
        context = turn.reply_before
        rows = []
        for item in picked.values():
            if answered_before(turn, item.id):
                continue  # it may answer: the session gave it already (no near-miss example)
            ids, types = pair_ids(turn.user, context, item.text)
            rows.append((ids, types, 1.0 if item.id in turn.expect else 0.0))
        if rows:
            out.append(rows)
    return out


def turn_batches(turns: list[list[tuple]], batch: int, seed: int = SEED):
    """Endless batches of whole turns, for the listwise loss: each row's label becomes (label,
    the turn's number within the batch, weight); a batch is filled up to `batch` rows with
    rows of weight 0. A turn of more than `batch` rows keeps its answers and the first of the
    rest."""
    rng = np.random.default_rng(seed)
    while True:
        chunk: list[tuple] = []
        count = 0
        for number in rng.permutation(len(turns)):
            rows = sorted(turns[number], key=lambda r: -r[2])[:batch]
            if len(chunk) + len(rows) > batch:
                yield padded(chunk, batch)
                chunk, count = [], 0
            chunk += [(ids, types, (label, count, 1.0)) for ids, types, label in rows]
            count += 1
        if chunk:
            yield padded(chunk, batch)


def padded(chunk: list[tuple], batch: int) -> list[tuple]:
    ids, types, _ = chunk[-1]
    return chunk + [(ids, types, (0.0, batch - 1, 0.0))] * (batch - len(chunk))


def pair_examples(groups: list[dict], negatives: int = 0
                  ) -> list[tuple[list[int], list[int], float]]:
    """corpus/cross-pairs: each group's answer (1) and near misses (0), read after the reply
    before the message as the sessions' items are; and `negatives` items of other groups
    (other_items) as more non-answers."""
    out = []
    others = other_items(groups, negatives) if negatives else [[] for _ in groups]
    for group, extra in zip(groups, others, strict=True):
        context = group.get("reply_before", "")
        ids, types = pair_ids(group["message"], context, group["answer"])
        out.append((ids, types, 1.0))
        for near in [*group["near"], *extra]:
            ids, types = pair_ids(group["message"], context, near)
            out.append((ids, types, 0.0))
    return out


def other_items(groups: list[dict], count: int, seed: int = SEED) -> list[list[str]]:
    """For each group, `count` answers of other groups: two in three from the same project's
    (the same people, another question), the rest from other projects. A memory holds
    hundreds of the same people's lines, one of which answers; and an answer is written
    fuller than its near misses (longer, a photo's caption more often), so with only its own
    items a group teaches that a long line answers. Other questions' answers are the lines
    that look most like answers and are not."""
    rng = np.random.default_rng(seed)
    by_stem = answers_by_stem(groups)
    picked = []
    for group in groups:
        own, mine = {group["answer"], *group["near"]}, stem(group["project"])
        same = [i for i in by_stem[mine] if i not in own]
        elsewhere = [i for name, items in by_stem.items() if name != mine for i in items
                     if i not in own]
        first = min(len(same), round(count * 2 / 3) if elsewhere else count)
        chosen = [same[k] for k in rng.permutation(len(same))[:first]]
        # the rest from other projects: a sample of indices, not a permutation of thousands
        for k in rng.choice(len(elsewhere), min(len(elsewhere), 4 * count), replace=False) \
                if elsewhere else []:
            if len(chosen) == count:
                break
            if elsewhere[k] not in chosen:
                chosen.append(elsewhere[k])
        picked.append(chosen)
    return picked


def initial_params(outputs: int = 1, layers: int = LAYERS) -> dict[str, np.ndarray]:
    base = get_model().weights
    keep = ("embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight",
            "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias")
    params = {k: np.asarray(base[k], np.float32) for k in keep}
    for name, value in base.items():
        if name.startswith("encoder.layer.") and int(name.split(".")[2]) < layers:
            params[name] = np.asarray(value, np.float32)
    params["head.weight"] = np.zeros((DIM, outputs), np.float32)
    params["head.bias"] = np.zeros(outputs, np.float32)
    return params


def layers_of(params) -> int:
    """How many transformer layers a set of weights holds."""
    return sum(1 for name in params if name.endswith(".attention.self.query.weight"))


def layers_in(path: Path) -> int:
    with np.load(path) as data:
        return int(data["layers"])


def forward(params, words, types, mask):
    """The same computation as cross.CrossEncoder.score_ids, in JAX (its logit)."""
    return logits(params, words, types, mask)[:, 0]


def logits(params, words, types, mask):
    """The same computation as cross.CrossEncoder.logits_ids, in JAX."""
    import jax
    import jax.numpy as jnp

    def norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + LN_EPS) * params[name + ".weight"] + params[name + ".bias"]

    def linear(x, name):
        return x @ params[name + ".weight"] + params[name + ".bias"]

    n, length = types.shape
    x = (words + params["embeddings.position_embeddings.weight"][:length]
         + params["embeddings.token_type_embeddings.weight"][types])
    x = norm(x, "embeddings.LayerNorm")
    bias = ((1.0 - mask) * -1e9)[:, None, None, :]
    head_dim = DIM // HEADS
    for layer in range(layers_of(params)):
        p = f"encoder.layer.{layer}."

        def heads(name, x=x, p=p):
            return linear(x, p + "attention.self." + name).reshape(
                n, length, HEADS, head_dim).transpose(0, 2, 1, 3)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = (q @ k.transpose(0, 1, 3, 2)) * head_dim ** -0.5 + bias
        context = (jax.nn.softmax(scores, -1) @ v).transpose(0, 2, 1, 3).reshape(n, length, DIM)
        x = norm(linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inner = jax.nn.gelu(linear(x, p + "intermediate.dense"), approximate=False)
        x = norm(linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return pooled @ params["head.weight"] + params["head.bias"]


def batch_arrays(rows, word_q, word_scale):
    length = next(b for b in BUCKETS if b >= max(len(r[0]) for r in rows))
    ids = np.zeros((len(rows), length), np.int64)
    types = np.zeros((len(rows), length), np.int64)
    mask = np.zeros((len(rows), length), np.float32)
    for row, (tokens, kinds, _) in enumerate(rows):
        ids[row, :len(tokens)] = tokens
        types[row, :len(kinds)] = kinds
        mask[row, :len(tokens)] = 1.0
    words = word_q[ids].astype(np.float32) * word_scale[ids]
    labels = np.asarray([r[2] for r in rows], np.float32)
    return words, types, mask, labels


def train(steps: int = STEPS, out: Path = CROSS_FILE, layers: int = LAYERS,
          corpus_root: Path = CORPUS, *, sessions_only: bool = False,
          start: Path | None = None, pairs_repeat: int = 1, group_negatives: int = 0,
          listwise: bool = False) -> dict:
    """One stage: from MiniLM's layers, or from the weights in `start` (a second stage, which
    keeps their layers and records their provenance as `from`; with `listwise`, on the
    sessions' turns whole, fit_listwise)."""
    started = time.time()
    before = json.loads(start.with_suffix(".json").read_text()) if start else None
    initial = read_weights(start) if start else None  # read before `out` (maybe it) is written
    turns = turn_examples(fit_turns(corpus_root))
    rows = [row for rows in turns for row in rows]
    groups = [] if sessions_only or listwise else read_cross_pairs(corpus_root)
    extra = pair_examples(groups, group_negatives)
    if initial is not None:
        layers = layers_of(initial)
    if listwise:
        fit_listwise(turns, steps, out, initial)
    elif initial is None:
        fit(rows + extra * pairs_repeat, steps, out, layers=layers)
    else:
        fit(rows + extra * pairs_repeat, steps, out, layers=layers, lr=CONTINUE_LR,
            head_lr=CONTINUE_LR, params=initial)
    line = command("memsift.training.cross", steps, layers, sessions_only=sessions_only,
                   start=start, pairs_repeat=pairs_repeat, group_negatives=group_negatives,
                   listwise=listwise)
    if before is not None:
        first = before["command"]
        if not before.get("cross_pairs") and "--sessions-only" not in first:
            first += " --sessions-only"  # it read no groups: the sessions' pairs alone
        line = f"{first} && {line}"
    counts: dict = {"pairs": len(rows), "cross_pairs": len(extra),
                    "cross_pairs_sha256": cross_pairs_hash(corpus_root) if groups
                    else hashlib.sha256().hexdigest()}
    if start is not None:
        counts.update(pairs_repeat=pairs_repeat, group_negatives=group_negatives,
                      **{"from": before})
    if listwise:
        counts.update(turns=len(turns), listwise_weight=LISTWISE_WEIGHT)
    return write_record(out, line, corpus_root, steps, started, **counts)


def command(module: str, steps: int, layers: int, *, sessions_only: bool = False,
            start: Path | None = None, pairs_repeat: int = 1, group_negatives: int = 0,
            listwise: bool = False) -> str:
    """The command that trains what `module` writes, as its provenance records it."""
    line = f"python -m {module} --steps {steps} --layers {layers}"
    if sessions_only:
        line += " --sessions-only"
    if listwise:
        line += " --listwise"
    if start is not None:
        path = start.resolve()
        line += f" --from {path.relative_to(REPO) if path.is_relative_to(REPO) else path}"
    if pairs_repeat != 1:
        line += f" --pairs-repeat {pairs_repeat}"
    if group_negatives:
        line += f" --group-negatives {group_negatives}"
    return line


def fit_turns(corpus_root: Path) -> list[Turn]:
    """The train sessions' turns, less the projects held apart to tune (tune_project)."""
    from memsift.judge.corpus import tune_project

    return [t for t in read_corpus((corpus_root,))
            if t.split == "train" and not tune_project(t.project)]


def write_record(out: Path, command: str, corpus_root: Path, steps: int, started: float,
                 **counts: int | str) -> dict:
    """The weights' provenance, beside them: command, date, the corpus's and the weights'
    sha256, the layers and steps, what was trained on and how long it took."""
    record = {"command": command, "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "corpus_sha256": corpus_hash((corpus_root,)),
              "weights_sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
              "layers": layers_in(out), "steps": steps, **counts,
              "seconds": round(time.time() - started)}
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def arguments(argv: list[str], steps: int, out: Path, layers: int = LAYERS
              ) -> tuple[int, Path, int]:
    """[--steps N] [--out FILE] [--layers N], with the trainer's defaults."""
    steps = int(argv[argv.index("--steps") + 1]) if "--steps" in argv else steps
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else out
    layers = int(argv[argv.index("--layers") + 1]) if "--layers" in argv else layers
    if not 1 <= layers <= 6:
        raise SystemExit("--layers: MiniLM has six layers")
    return steps, out, layers


def fit(rows: list[tuple[list[int], list[int], float]], steps: int, out: Path, *,
        layers: int = LAYERS, positive_weight: float = POSITIVE_WEIGHT, lr: float = LR,
        head_lr: float = HEAD_LR, params: dict | None = None) -> None:
    """Train from MiniLM's first layers (or from `params`) on (ids, type ids, label) rows;
    save to `out` every 300 steps and at the end."""
    import jax.numpy as jnp

    print(f"pairs: {len(rows)}, answers {int(sum(r[2] for r in rows))}", flush=True)
    params = trainable(initial_params(layers=layers) if params is None else params)

    def loss(p, words, types, mask, labels):
        return jnp.mean(pointwise(forward(p, words, types, mask), labels, positive_weight))

    run_steps(row_batches(rows, BATCH), steps, out, params,
              optimizer(params, steps, lr, head_lr, WARMUP), loss)


def trainable(params: dict) -> dict:
    """Weights as JAX arrays in float32 (int8 layers dequantized by read_weights), less the
    layer count."""
    import jax.numpy as jnp

    return {k: jnp.asarray(np.asarray(v, np.float32)) for k, v in params.items() if k != "layers"}


def pointwise(logits, labels, positive_weight: float = POSITIVE_WEIGHT):
    """Each row's binary cross-entropy, an answer's weighed `positive_weight`."""
    import jax.numpy as jnp
    import optax

    return (jnp.where(labels > 0.5, positive_weight, 1.0)
            * optax.sigmoid_binary_cross_entropy(logits, labels))


def fit_listwise(turns: list[list[tuple]], steps: int, out: Path, params: dict, *,
                 lr: float = CONTINUE_LR) -> None:
    """Continue trained weights on whole turns: the binary cross-entropy as `fit`, plus, per
    turn, a softmax over its rows' logits and a fixed null logit of 0 whose target is the
    answers (or the null where nothing answers). Each row alone learns that a same-subject
    item is no answer; together, the turn's best non-answer is the one pushed down most."""
    import jax.numpy as jnp

    print(f"turns: {len(turns)}, rows {sum(len(t) for t in turns)}", flush=True)
    params = trainable(params)

    def loss(p, words, types, mask, labels):
        logit = forward(p, words, types, mask)
        label, turn, weight = labels[:, 0], labels[:, 1].astype(jnp.int32), labels[:, 2]
        each = jnp.sum(weight * pointwise(logit, label)) / jnp.maximum(jnp.sum(weight), 1.0)
        member = (turn[None, :] == jnp.arange(BATCH)[:, None]) * weight[None, :]  # (turns, rows)
        top = jnp.maximum(0.0, jnp.max(jnp.where(member > 0, logit[None, :], -1e9), axis=1))
        # other turns' rows masked before exp: a large logit there must not overflow to inf * 0
        mass = jnp.exp(jnp.where(member > 0, logit[None, :] - top[:, None], -jnp.inf)) * member
        every = top + jnp.log(jnp.exp(-top) + mass.sum(1))
        answered = (member * label[None, :]).sum(1) > 0
        wanted = jnp.where(answered,
                           top + jnp.log(jnp.maximum((mass * label[None, :]).sum(1), 1e-30)),
                           0.0)
        present = member.sum(1) > 0
        listwise = jnp.sum(jnp.where(present, every - wanted, 0.0)) / \
            jnp.maximum(present.sum(), 1)
        return each + LISTWISE_WEIGHT * listwise

    run_steps(turn_batches(turns, BATCH), steps, out, params,
              optimizer(params, steps, lr, lr, WARMUP), loss)


def optimizer(params, steps: int, lr: float, head_lr: float, warmup: int):
    """AdamW with a linear warm-up and decay to zero: the layers at `lr` with weight decay,
    the head (which starts at zero) at `head_lr` without."""
    import optax

    def schedule(peak):
        return optax.join_schedules([optax.linear_schedule(0.0, peak, warmup),
                                     optax.linear_schedule(peak, 0.0, max(1, steps - warmup))],
                                    [warmup])

    return optax.multi_transform(
        {"layers": optax.adamw(schedule(lr), weight_decay=WEIGHT_DECAY),
         "head": optax.adamw(schedule(head_lr), weight_decay=0.0)},
        {k: ("head" if k.startswith("head.") else "layers") for k in params})


def row_batches(rows, batch: int, seed: int = SEED):
    """Endless minibatches of `batch` rows in a fixed shuffled order, reshuffled at the end of
    each pass."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(rows))
    for number in itertools.count():
        start = (number * batch) % len(rows)
        chunk = [rows[i] for i in order[start:start + batch]]
        if len(chunk) < batch:
            order = rng.permutation(len(rows))
            chunk = [rows[i] for i in order[:batch]]
        yield chunk


def run_steps(batches, steps: int, out: Path, params, opt, loss) -> None:
    """`steps` minibatches from the iterator `batches` (row_batches, turn_batches),
    `loss(params, words, types, mask, labels)` minimised; the weights saved to `out` every
    300 steps and at the end."""
    import jax
    import optax

    started = time.time()
    model = get_model()
    state = opt.init(params)

    @jax.jit
    def step(p, s, words, types, mask, labels):
        value, grads = jax.value_and_grad(loss)(p, words, types, mask, labels)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    running = 0.0
    for number, chunk in zip(range(steps), batches):
        arrays = batch_arrays(chunk, model.word_q, model.word_scale)
        params, state, value = step(params, state, *arrays)
        running = 0.98 * running + 0.02 * float(value) if number else float(value)
        if number % 50 == 0 or number == steps - 1:
            print(f"  step {number}/{steps} loss {running:.4f} "
                  f"({time.time() - started:.0f} s)", flush=True)
        if number % 300 == 299:
            save(params, out)
    save(params, out)


def outputs(path: Path, rows, batch: int = 64) -> np.ndarray:
    """The head's outputs, (rows, outputs), of the weights in `path` for (ids, type ids, _)
    rows: JAX, the same forward as the hook's numpy."""
    import jax
    import jax.numpy as jnp

    params = trainable(read_weights(path))
    model = get_model()
    run = jax.jit(lambda w, t, m: logits(params, w, t, m))
    out = []
    for start in range(0, len(rows), batch):
        words, types, mask, _ = batch_arrays(rows[start:start + batch], model.word_q,
                                             model.word_scale)
        out.append(np.asarray(run(jnp.asarray(words), jnp.asarray(types), jnp.asarray(mask))))
    return np.concatenate(out) if out else np.zeros((0, params["head.bias"].shape[0]), np.float32)


def save(params, out: Path) -> None:
    """The weights as memsift.model.cross reads them: int8 layers (quantize)."""
    arrays = quantize({k: np.asarray(v, np.float32) for k, v in params.items()})
    arrays["layers"] = np.asarray(layers_of(params))
    with open(out, "wb") as handle:
        np.savez(handle, **arrays)


def stage(argv: list[str]) -> dict:
    """[--sessions-only] [--from FILE] [--pairs-repeat N] [--group-negatives N] [--listwise]:
    which stage train() runs."""
    start = Path(argv[argv.index("--from") + 1]) if "--from" in argv else None
    repeat = int(argv[argv.index("--pairs-repeat") + 1]) if "--pairs-repeat" in argv else 1
    negatives = (int(argv[argv.index("--group-negatives") + 1])
                 if "--group-negatives" in argv else 0)
    if start is not None and not start.with_suffix(".json").is_file():
        raise SystemExit(f"--from {start}: no provenance beside it (train the first stage)")
    if repeat < 1:
        raise SystemExit("--pairs-repeat: at least 1")
    if negatives < 0:
        raise SystemExit("--group-negatives: 0 or more")
    listwise = "--listwise" in argv
    if listwise and start is None:
        raise SystemExit("--listwise continues trained weights: name them with --from")
    return {"sessions_only": "--sessions-only" in argv, "start": start,
            "pairs_repeat": repeat, "group_negatives": negatives, "listwise": listwise}


def main(argv: list[str]) -> int:
    print(json.dumps(train(*arguments(argv, STEPS, CROSS_FILE), **stage(argv)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
