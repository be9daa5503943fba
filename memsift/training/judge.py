"""Train the local judge's context heads on the labelled corpus (corpus/) and write them into
memsift/data/judge_local.npz, with their provenance in memsift/data/judge_local.json.

    make train        # a training venv with JAX (CPU), then this module

Two heads, both read the message with the turn before it (features.context_of):
- kinds: softmax regression over [message, turn before, cue features], on the corpus's train
  sessions and the hand-written kinds.jsonl;
- items: a small MLP over features.item_matrix, one row per candidate the cascade would judge
  (the nearest notes and passages by cosine and shared rare words), labelled 1 when the turn
  expects that item. Rank and gap features are computed within each group (notes, passages),
  as the cascade scores them.

The thresholds are chosen on a part of the train sessions held apart by project ("tune");
every number reported is on the validation sessions. JAX trains; the hook runs numpy only.
Deterministic given the corpus: two runs write the same bytes. The seeds are fixed, the kind
head is full-batch, the minibatch order is fixed, each corpus vector is the one its text gets
alone (judge/corpus.py embeds without padding), and bm25 sums in a fixed order.

This module trains the two heads and runs the whole (`python -m memsift.training.judge`,
`--out DIR`, `--cross FILE`, `--no-cross`); the cross-encoder's stack is training/stack.py, the
threshold choice and the turn-level counts training/thresholds.py.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memsift.judge.base import KINDS, SEARCH_KINDS
from memsift.judge.corpus import (
    CORPUS,
    Turn,
    Vectors,
    answered_before,
    corpus_hash,
    read_corpus,
    tune_project,
)
from memsift.judge.features import (
    EMBED_SCALE,
    item_matrix,
    kind_context_features,
    with_context,
)
from memsift.judge.local import _mlp, stack_inputs
from memsift.model.embed import MODEL_ID
from memsift.model.lexical import rerank
from memsift.paths import PACKAGE_DATA
from memsift.training.stack import (
    CROSS_TOP,
    cross_scores,
    fit_stack,
    relative_rows,
    stacked,
    top_rows,
)
from memsift.training.thresholds import (
    PASSAGE_SHARES,
    auc_against_near,
    by_shape,
    choose_policy,
    choose_threshold,
    decide,
)

HEADS_FILE = PACKAGE_DATA / "judge_local.npz"
PROVENANCE_FILE = PACKAGE_DATA / "judge_local.json"
NOTE_CANDIDATES, PASSAGE_CANDIDATES = 12, 16  # as the cascade asks (prompt/policy.py)
KIND_L2 = 1e-2
# kinds.jsonl's short hand-written messages count this many times: the corpus has few bare
# one-liners, and with them once the held-out kinds.jsonl accuracy fell from 0.94 to 0.84
# (corpus validation: 0.65 either way, search / no search 0.85)
KINDS_FILE_WEIGHT = 16  # the hand-written kinds define the eleven by example: they outweigh
#                        the corpus's writers, who blur 'builds on' and 'instruction'
KIND_STEPS = 600
HIDDEN = 32
ITEM_STEPS = 3000
ITEM_BATCH = 512
ITEM_LR = 2e-3
ITEM_WD = 3e-2  # on the tune projects: 1e-4 memorised the fit sessions (loss 2e-4, AUC 0.80)
POSITIVE_WEIGHT = 4.0  # answers are ~3% of the candidates
SEARCH_GATE = 0.5  # search / no search as a yes/no: the kinds that call for memory hold half


# --- vectors ---------------------------------------------------------------------------------

def texts_of(turns: Sequence[Turn]) -> list[str]:
    texts = set()
    for turn in turns:
        texts.add(turn.user)
        texts.add(with_context(turn.user, turn.context))
        if turn.context:
            texts.add(turn.context)
        texts.update(item.text for item in turn.items)
    return sorted(texts)


# --- kinds -----------------------------------------------------------------------------------

def kind_rows(turns: Sequence[Turn], vectors: Vectors) -> np.ndarray:
    return np.vstack([kind_context_features(t.user, vectors.one(t.user),
                                            vectors.one(t.context) if t.context else None)
                      for t in turns])


def extra_kind_rows(vectors: Vectors) -> tuple[np.ndarray, np.ndarray]:
    """kinds.jsonl's hand-written messages (train split), as messages with no turn before."""
    from memsift.judge.train_kinds import read_jsonl

    rows = [r for r in read_jsonl("kinds.jsonl") if r["split"] == "train"]
    vectors.fill([r["text"] for r in rows])
    x = np.vstack([kind_context_features(r["text"], vectors.one(r["text"]), None) for r in rows])
    return x, np.asarray([KINDS.index(r["kind"]) for r in rows])


def fit_kinds(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from memsift.judge.train_kinds import fit_softmax

    return fit_softmax(x, y, len(KINDS), KIND_L2, steps=KIND_STEPS)


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def search_mass(probs: np.ndarray) -> np.ndarray:
    return probs[:, [KINDS.index(k) for k in SEARCH_KINDS]].sum(axis=1)


# --- items -----------------------------------------------------------------------------------

def candidates(turn: Turn, vectors: Vectors) -> list[list]:
    """The cascade's two groups of candidates for a turn: nearest notes, nearest passages."""
    query = vectors.one(turn.user)
    groups = []
    for source, keep in (("notes", NOTE_CANDIDATES), ("longterm", PASSAGE_CANDIDATES)):
        group = [i for i in turn.items if i.source == source]
        if not group:
            continue
        texts = [i.text for i in group]
        picked = rerank(turn.user, texts, vectors(texts) @ query, keep)
        groups.append([group[j] for j in picked])
    return groups


def item_rows(turns: Sequence[Turn], kind_probs: np.ndarray, vectors: Vectors, *,
              add_missing: bool) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """Feature rows, labels and (turn number, item id) for every candidate of every turn.
    `add_missing` puts an expected item the search missed among the candidates (training:
    every answer is something to learn from)."""
    rows, labels, where = [], [], []
    with np.load(HEADS_FILE) as heads:  # train_kinds.py's pair head, an input of this one
        pair_head = (heads["pair_w"], heads["pair_b"])
    for n, turn in enumerate(turns):
        groups = candidates(turn, vectors)
        if add_missing:
            have = {i.id for g in groups for i in g}
            for item in turn.items:
                if item.id in turn.expect and item.id not in have:
                    for group in groups:
                        if group and group[0].source == item.source:
                            group.append(item)
        context = turn.context
        m = vectors.one(turn.user)
        mc = vectors.one(with_context(turn.user, context))
        c = vectors.one(context) if context else None
        for group in groups:
            texts = [i.text for i in group]
            rows.append(item_matrix(turn.user, context, kind_probs[n], texts, vectors(texts),
                                    m, mc, c, pair_head))
            labels += [1 if i.id in turn.expect else 0 for i in group]
            where += [(n, i.id) for i in group]
    return np.vstack(rows), np.asarray(labels, np.float32), where


def unambiguous(turns: Sequence[Turn], where: list[tuple[int, str]]) -> np.ndarray:
    """Which candidate rows the item models learn from: all but the near items the session
    had already given (corpus.answered_before), which may answer the message all the same."""
    return np.asarray([not answered_before(turns[n], item_id) for n, item_id in where], bool)


def fit_items(x: np.ndarray, y: np.ndarray, seed: int = 0) -> dict[str, np.ndarray]:
    """A one-hidden-layer MLP, BCE with answers weighted up, AdamW, fixed minibatch order."""
    import jax
    import jax.numpy as jnp
    import optax

    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-3
    xs = (x - mean) / std
    key = jax.random.PRNGKey(seed)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (x.shape[1], HIDDEN)) * (1.0 / np.sqrt(x.shape[1])),
              "b1": jnp.zeros(HIDDEN),
              "w2": jax.random.normal(k2, (HIDDEN, 1)) * (1.0 / np.sqrt(HIDDEN)),
              "b2": jnp.zeros(1)}
    opt = optax.adamw(ITEM_LR, weight_decay=ITEM_WD)
    state = opt.init(params)

    def loss(p, xb, yb):
        h = jax.nn.relu(xb @ p["w1"] + p["b1"])
        logit = (h @ p["w2"] + p["b2"])[:, 0]
        weight = jnp.where(yb > 0.5, POSITIVE_WEIGHT, 1.0)
        return jnp.mean(weight * optax.sigmoid_binary_cross_entropy(logit, yb))

    @jax.jit
    def step(p, s, xb, yb):
        value, grads = jax.value_and_grad(loss)(p, xb, yb)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value

    rng = np.random.default_rng(seed)
    xj, yj = jnp.asarray(xs, jnp.float32), jnp.asarray(y, jnp.float32)
    for number in range(ITEM_STEPS):
        batch = rng.integers(0, len(xs), ITEM_BATCH)
        params, state, value = step(params, state, xj[batch], yj[batch])
        if number % 500 == 0:
            print(f"  item step {number}: loss {float(value):.4f}", flush=True)
    out = {k: np.asarray(v, np.float32) for k, v in params.items()}
    out["mean"], out["std"] = mean.astype(np.float32), std.astype(np.float32)
    return out


def fit_item_ensemble(x: np.ndarray, y: np.ndarray, seeds: int = 1) -> dict[str, np.ndarray]:
    """`seeds` item heads from different starts and minibatch orders, averaged in logit: the
    same one-hidden-layer form with their hidden units side by side and the output layer
    divided by their number, so the hook's forward (LocalJudge) reads it unchanged."""
    heads = [fit_items(x, y, seed) for seed in range(seeds)]
    return heads[0] if seeds == 1 else merge_heads(heads)


def merge_heads(heads: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One item head whose logit is the mean of the heads' logits (same mean and std)."""
    return {"w1": np.concatenate([h["w1"] for h in heads], axis=1),
            "b1": np.concatenate([h["b1"] for h in heads]),
            "w2": (np.concatenate([h["w2"] for h in heads], axis=0) / len(heads)
                   ).astype(np.float32),
            "b2": np.mean([h["b2"] for h in heads], axis=0).astype(np.float32),
            "mean": heads[0]["mean"], "std": heads[0]["std"]}


def mlp_scores(heads: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The item head's scores, by the run-time forward itself."""
    return _mlp({f"item_{k}": v for k, v in heads.items()}, x)


# --- the run ---------------------------------------------------------------------------------

def train(corpus_root: Path = CORPUS, heads_file: Path = HEADS_FILE,
          provenance_file: Path = PROVENANCE_FILE, cross_file: Path | None = None,
          kind_file: Path | None = None, seeds: int = 1, relative: bool = True) -> dict:
    started = time.time()
    turns = list(read_corpus((corpus_root,)))
    fit = [t for t in turns if t.split == "train" and not tune_project(t.project)]
    tune = [t for t in turns if t.split == "train" and tune_project(t.project)]
    val = [t for t in turns if t.split == "val"]
    print(f"turns: fit {len(fit)}, tune {len(tune)}, val {len(val)}", flush=True)
    vectors = Vectors()
    vectors.fill(texts_of(turns))

    kx, ky = extra_kind_rows(vectors)
    fit_x = np.vstack([kind_rows(fit + tune, vectors)] + [kx] * KINDS_FILE_WEIGHT)
    fit_y = np.concatenate([[KINDS.index(t.kind) for t in fit + tune]] + [ky] * KINDS_FILE_WEIGHT)
    kind_w, kind_b = fit_kinds(fit_x, fit_y)

    def kinds_of(part):
        return softmax(kind_rows(part, vectors) @ kind_w + kind_b)

    probs = {name: kinds_of(part) for name, part in (("fit", fit), ("tune", tune), ("val", val))}
    # What the cascade gates the search on and reports: the kind encoder's kinds when it is
    # there; the item head reads the linear head's either way (it is fitted on those).
    gate, need = dict(probs), {"tune": None, "val": None}
    if kind_file is not None and kind_file.exists():
        for name, part in (("tune", tune), ("val", val)):
            gate[name], need[name] = encoder_kinds(part, kind_file)
    x, y, where = item_rows(fit, probs["fit"], vectors, add_missing=True)
    clear = unambiguous(fit, where)
    x, y = x[clear], y[clear]
    print(f"item rows {x.shape}, answers {int(y.sum())}, left out {int((~clear).sum())}",
          flush=True)
    item = fit_item_ensemble(x, y, seeds)

    scored, labels = {}, {}
    for name, part in (("tune", tune), ("val", val)):
        px, py, where = item_rows(part, probs[name], vectors, add_missing=False)
        scored[name], labels[name] = (mlp_scores(item, px), where), py
    extra = {}
    if cross_file is not None and cross_file.exists():
        tops = {name: top_rows(part, scored[name][1], scored[name][0])
                for name, part in (("tune", tune), ("val", val))}
        second = {name: cross_scores(part, scored[name][1], tops[name], cross_file)
                  for name, part in (("tune", tune), ("val", val))}
        print("cross-encoder scored", {k: len(v) for k, v in second.items()}, flush=True)
        row_need = {name: None if need[name] is None else
                    need[name][[scored[name][1][r][0] for r in tops[name]]]
                    for name in ("tune", "val")}
        rel = relative_rows(tune, scored["tune"][1], tops["tune"], scored["tune"][0],
                            second["tune"]) if relative else None
        clear = unambiguous(tune, [scored["tune"][1][r] for r in tops["tune"]])
        w, b = fit_stack(stack_inputs(scored["tune"][0][tops["tune"]], second["tune"],
                                      row_need["tune"], rel)[clear],
                         labels["tune"][tops["tune"]][clear])
        extra = {"stack_w": w, "stack_b": b, "cross_top": np.int64(CROSS_TOP),
                 "stack_relative": np.bool_(relative),
                 "cross_sha256": np.asarray(hashlib.sha256(cross_file.read_bytes()).hexdigest())}
        for name, part in (("tune", tune), ("val", val)):
            first, where = scored[name]
            scored[name] = (stacked(first, tops[name], second[name], w, b, part, where,
                                    row_need[name], relative), where)
    if need["val"] is not None:
        extra["kind_encoder_sha256"] = np.asarray(
            hashlib.sha256(kind_file.read_bytes()).hexdigest())
    threshold, share = choose_policy(tune, *scored["tune"], search_mass(gate["tune"]))
    report = evaluate(val, gate["val"], *scored["val"], threshold, passage_share=share)
    report["passage_shares"] = share_table(tune, val, scored, gate)
    report["long_sessions"] = long_sessions(val, *scored["val"], search_mass(gate["val"]),
                                            threshold, share)
    # The worth gate the cascade skips for these heads (LocalJudge.worth_gates_search):
    gated = decide(val, *scored["val"], search_mass(gate["val"]), threshold,
                   worth_of(val, vectors), share)
    report.update(threshold=threshold, passage_share=share, with_worth_gate={k: gated[k] for k in
                                                        ("found", "for_nothing")},
                  seconds=round(time.time() - started))
    heads = dict(np.load(HEADS_FILE))  # the other heads stay as train_kinds.py wrote them
    heads.update({"kindc_w": kind_w, "kindc_b": kind_b, "item_threshold": np.float32(threshold),
                  "item_passage_share": np.float32(share),
                  **{f"item_{k}": v for k, v in item.items()}, **extra})
    for key in ("stack_w", "stack_b", "cross_top", "stack_relative", "cross_sha256",
                "kind_encoder_sha256"):
        if key not in extra:
            heads.pop(key, None)
    with open(heads_file, "wb") as handle:
        np.savez(handle, **heads)
    write_provenance(corpus_root, heads_file, provenance_file, report,
                     {"fit": len(fit), "tune": len(tune), "val": len(val)}, seeds)
    return report


def encoder_kinds(turns: Sequence[Turn], kind_file: Path) -> tuple[np.ndarray, np.ndarray]:
    """The kind encoder's kind probabilities and need for memory per turn, the rules' sure
    kinds (and no need) where they decide, as LocalJudge.kind and needs_memory give them."""
    from memsift.judge.rules import rule_kind, sure
    from memsift.training.kind_encoder import predict

    out = predict(list(turns), kind_file)
    probs = softmax(out[:, :len(KINDS)])
    need = 1.0 / (1.0 + np.exp(-out[:, len(KINDS)]))
    for n, turn in enumerate(turns):
        ruled = rule_kind(turn.user)
        if ruled is not None:
            probs[n] = [sure(ruled)[k] for k in KINDS]
            need[n] = 1e-3
    return probs, need


def worth_of(turns: Sequence[Turn], vectors: Vectors) -> np.ndarray:
    """The worth head's answer for each message (the cascade asks it before the long-term
    search), from the heads as they are."""
    from memsift.judge.features import worth_features

    heads = dict(np.load(HEADS_FILE))
    x = np.vstack([np.concatenate([vectors.one(t.user) * EMBED_SCALE, worth_features(t.user)])
                   for t in turns])
    return softmax(x @ heads["worth_w"] + heads["worth_b"])[:, 1]


def long_sessions(val, scores, where, search_p, threshold: float, share: float) -> dict:
    """The policy's counts on the validation projects' long sessions alone (by_shape)."""
    parts = by_shape(val, scores, where, search_p)
    if len(parts) < 2:
        return {}
    counts = decide(*parts[1][:4], threshold, passage_share=share)
    return {k: counts[k] for k in ("found", "need", "for_nothing", "nothing", "wrong")}


def share_table(tune, val, scored, gate) -> dict[str, dict]:
    """Per passage share the trainer chooses among: its lowest threshold on the tune projects,
    what it finds there, and what it finds and adds for nothing on validation (reported, never
    chosen on)."""
    table = {}
    for share in PASSAGE_SHARES:
        threshold = choose_threshold(tune, *scored["tune"], search_mass(gate["tune"]),
                                     passage_share=share)
        on_tune = decide(tune, *scored["tune"], search_mass(gate["tune"]), threshold,
                         passage_share=share)
        on_val = decide(val, *scored["val"], search_mass(gate["val"]), threshold,
                        passage_share=share)
        table[str(share)] = {"threshold": threshold, "tune_found": on_tune["found"],
                             "val_found": on_val["found"],
                             "val_for_nothing": on_val["for_nothing"]}
    return table


def evaluate(val, kind_probs, scores, where, threshold: float, worth=None,
             passage_share: float | None = None) -> dict:
    truth = np.asarray([KINDS.index(t.kind) for t in val])
    search_p = search_mass(kind_probs)
    needs = np.asarray([t.kind in SEARCH_KINDS for t in val])
    counts = decide(val, scores, where, search_p, threshold, worth, passage_share)
    return {
        "kind_accuracy": round(float((kind_probs.argmax(axis=1) == truth).mean()), 3),
        "search_accuracy": round(float(((search_p >= SEARCH_GATE) == needs).mean()), 3),
        "item_auc_vs_near": round(auc_against_near(val, scores, where), 3),
        "found": counts["found"], "needs": counts["need"],
        "for_nothing": counts["for_nothing"], "nothing_needed": counts["nothing"],
        "wrong": counts["wrong"],
        "lost": {k: counts[k] for k in ("gated", "not_candidate", "below_bar", "dropped")},
    }


def write_provenance(corpus_root: Path, heads_file: Path, provenance_file: Path, report: dict,
                     turns: dict[str, int], seeds: int = 1) -> None:
    weights = hashlib.sha256(heads_file.read_bytes()).hexdigest()
    flags = f" --seeds {seeds}" if seeds != 1 else ""
    record = {
        "command": f"make train  (python -m memsift.training.judge{flags})",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "corpus_sha256": corpus_hash((corpus_root,)),
        "heads_sha256": weights,
        "model_id": MODEL_ID,
        "turns": turns,
        "validation": report,
    }
    provenance_file.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """`--out DIR` writes the heads and their provenance there instead (experiments);
    `--cross FILE` / `--no-cross` and `--kinds FILE` / `--no-kinds` choose the encoders;
    `--seeds K` averages K item heads (fit_item_ensemble); `--no-relative` fits the stack
    without the logits relative to the group's best."""
    from memsift.model.cross import CROSS_FILE, KIND_FILE

    argv = list(argv or [])
    cross = Path(argv[argv.index("--cross") + 1]) if "--cross" in argv else CROSS_FILE
    if "--no-cross" in argv:
        cross = None
    kinds = Path(argv[argv.index("--kinds") + 1]) if "--kinds" in argv else KIND_FILE
    if "--no-kinds" in argv:
        kinds = None
    seeds = int(argv[argv.index("--seeds") + 1]) if "--seeds" in argv else 1
    relative = "--no-relative" not in argv
    if "--out" in argv:
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)  # before hours of work, not after
        report = train(heads_file=out / HEADS_FILE.name,
                       provenance_file=out / PROVENANCE_FILE.name, cross_file=cross,
                       kind_file=kinds, seeds=seeds, relative=relative)
    else:
        report = train(cross_file=cross, kind_file=kinds, seeds=seeds, relative=relative)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
