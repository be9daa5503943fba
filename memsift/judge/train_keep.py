"""Train the session-end keep decision on the labelled corpus (corpus/sessions).

    python -m memsift.judge.train_keep        (or: make train-keep)

Every exchange of every session is a row (memsift.judge.keep.session_rows: the exchange, the
reply before it, what the session and the project's notes and passages held before it, and the
kind encoder's reading of the message); its label is the corpus's `keep`: by default (what the
shipped head is trained on) the labels of corpus/keep-labels.jsonl, one written rule
(corpus/KEEP-RULE.md) applied to every exchange in one pass, and the keep-only sessions of
corpus/keep-sessions, labelled under the same rule; with `--labels writers`, the session
writers' own labels on corpus/sessions alone. Training reads the "train" sessions only; the
threshold is chosen on out-of-fold predictions over the train projects' sessions, and the
numbers are measured on the "val" sessions, held apart by project. The restatement head is
fitted on the (exchange, item) pairs of train sessions, the corpus's `restates` and `expect`
naming the positives (a reply that answers from an item repeats it); its score is also a
feature of the keep head.

Writes memsift/data/keep_head.npz and, beside it, keep_head.json: the corpus's hash, the
command, the date, the counts and the validation numbers. Vectors are cached under .cache/
by text hash, so a rerun embeds only what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsift.clock import now_iso
from memsift.judge import keep
from memsift.judge.corpus import (
    CORPUS,
    REPO,
    Turn,
    Vectors,
    keep_labels_file,
    keep_roots,
    read_corpus,
    session_files,
    tune_project,
)
from memsift.model.cross import KEEP_CROSS_FILE
from memsift.model.embed import MODEL_ID
from memsift.model.lexical import content_words

VECTOR_CACHE = REPO / ".cache" / "keep-vectors.npz"
KINDS_CACHE = REPO / ".cache" / "keep-kinds.npz"  # the kind encoder's outputs, by text hash
FOLDS = 5  # train projects split this many ways for out-of-fold thresholds
KEEP_L2 = 0.1  # strong weight decay: the vectors fit the training projects' wording else
RESTATE_L2 = 1e-3
RESTATE_PRECISION = 0.8  # of the exchanges said to restate an item, this share name the right one
STEPS = 300  # Adam steps; the validation numbers stop moving well before
LEARNING_RATE = 0.05
TARGET = 0.8  # the precision and recall asked for on val
STACK_L2 = 1e-3  # three weights fitted on ~1,500 exchanges: little to regularise
EXTRA_COPIES = 3  # the templated single exchanges, each counted this many times: the only rows
#                  with nothing held, the regime of a project's first session
BETA = 0.7  # a note for nothing is a distractor on every later prompt of its subject; a
#             missed one costs the work once: precision counts twice as much as recall


def sessions_of(turns: Sequence[Turn]) -> dict[str, list[Turn]]:
    by_session: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_session[turn.session].append(turn)
    return dict(by_session)


class Kinds:
    """The kind encoder's outputs for (message, reply before, user before) reads, cached on
    disk by their hash and the encoder file's, so a rerun runs it only on what changed."""

    def __init__(self, path: Path = KINDS_CACHE) -> None:
        from memsift.model.cross import KIND_FILE

        self.path = path
        self.encoder = hashlib.sha256(KIND_FILE.read_bytes()).hexdigest()
        self.table: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path) as data:
                if str(data["encoder"]) == self.encoder:
                    self.table = dict(zip((str(k) for k in data["keys"]), data["logits"]))

    @staticmethod
    def key(read: tuple[str, str, str]) -> str:
        return hashlib.sha1("\0".join(read).encode()).hexdigest()

    def __call__(self, reads: Sequence[tuple[str, str, str]]) -> np.ndarray:
        missing = sorted({r for r in reads if self.key(r) not in self.table})
        if missing:
            for read, logits in zip(missing, keep.encoder_kinds(missing)):
                self.table[self.key(read)] = logits
            self.save()
        if not reads:
            return np.zeros((0, keep.N_KIND), np.float32)
        return np.stack([self.table[self.key(r)] for r in reads])

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.table)
        np.savez(self.path, keys=np.asarray(keys), encoder=np.asarray(self.encoder),
                 logits=np.stack([self.table[k] for k in keys]).astype(np.float32))


def held_of(turns: Sequence[Turn], vectors: Vectors) -> keep.Held:
    texts = [item.text for item in turns[0].items]
    return keep.Held.of(texts, vectors(texts))


def keep_rows(sessions: dict[str, list[Turn]], vectors: Vectors, restate: np.ndarray,
              kinds: keep.KindFn | None = None) -> tuple[np.ndarray, list[Turn]]:
    rows, order = [], []
    for turns in sessions.values():
        exchanges = keep.in_order([(t.user, t.assistant) for t in turns])
        rows.append(keep.session_rows(exchanges, held_of(turns, vectors), vectors, restate,
                                      kinds))
        order += turns
    return np.concatenate(rows), order


def restate_rows(sessions: dict[str, list[Turn]], vectors: Vectors
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exchange, item) rows, their labels, and each row's exchange number."""
    rows, labels, owner = [], [], []
    number = 0
    for turns in sessions.values():
        held = held_of(turns, vectors)
        ids = [item.id for item in turns[0].items]
        for turn in turns:
            words = content_words(turn.user + " " + turn.assistant)
            pairs = keep.restate_pairs(vectors([turn.user])[0], vectors([turn.assistant])[0],
                                       words, held)
            rows.append(pairs)
            labels += [item in (turn.restates | turn.expect) for item in ids]
            owner += [number] * len(ids)
            number += 1
    return np.concatenate(rows), np.asarray(labels, np.float32), np.asarray(owner)


def best_per_exchange(scores: np.ndarray, labels: np.ndarray, owner: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per exchange: the best item's score, whether it is one the exchange restates, and
    whether the exchange restates anything."""
    best, right, any_ = [], [], []
    for number in np.unique(owner):
        rows = np.flatnonzero(owner == number)
        top = rows[int(np.argmax(scores[rows]))]
        best.append(scores[top])
        right.append(labels[top] == 1)
        any_.append(labels[rows].any())
    return np.asarray(best, float), np.asarray(right, bool), np.asarray(any_, bool)


def restate_threshold(best: np.ndarray, right: np.ndarray) -> float:
    """The lowest threshold at which the item named is the one restated this often: a wrong
    one would turn a new note into a reinforcement of another."""
    for threshold in np.arange(0.05, 0.99, 0.01):
        named = best >= threshold
        if named.any() and (right & named).sum() / named.sum() >= RESTATE_PRECISION:
            return round(float(threshold), 2)
    return 0.99


def fit(x: np.ndarray, y: np.ndarray, l2: float, steps: int = STEPS,
        balanced: bool = True) -> np.ndarray:
    """Logistic regression, balanced classes, Adam on standardised columns; the scaling is
    folded back into the weights, so the head is one dot product at run time."""
    mean, std = x.mean(axis=0), x.std(axis=0)
    constant = std < 1e-8
    mean[constant], std[constant] = 0.0, 1.0
    z = (x - mean) / std
    positive = max(1.0, float(y.sum()))
    weight = (np.where(y == 1, len(y) / (2 * positive), len(y) / (2 * max(1.0, len(y) - positive)))
              if balanced else np.ones(len(y)))
    w = np.zeros(x.shape[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        grad = z.T @ ((keep.sigmoid(z @ w) - y) * weight) / len(y) + l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= LEARNING_RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    folded = w / std
    bias = np.flatnonzero(constant & (np.abs(x[0]) > 0))
    offset = float(w[~constant] @ (mean[~constant] / std[~constant]))
    if len(bias):
        folded[bias[-1]] = (w[bias[-1]] - offset) / x[0, bias[-1]]
    return folded.astype(np.float32)


def folds_of(projects: Sequence[str]) -> np.ndarray:
    return np.asarray([int(hashlib.sha256(p.encode()).hexdigest(), 16) % FOLDS for p in projects])


def out_of_fold(x: np.ndarray, y: np.ndarray, folds: np.ndarray, l2: float) -> np.ndarray:
    scores = np.zeros(len(y))
    for fold in range(FOLDS):
        held_out = folds == fold
        if held_out.all() or not held_out.any():
            continue  # a corpus of few projects: this fold has nothing to learn from
        scores[held_out] = keep.sigmoid(x[held_out] @ fit(x[~held_out], y[~held_out], l2))
    return scores


def precision_recall(predicted: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    tp = float((predicted & (y == 1)).sum())
    return tp / max(1.0, float(predicted.sum())), tp / max(1.0, float((y == 1).sum()))


def f_beta(precision: float, recall: float, beta: float = BETA) -> float:
    if not precision or not recall:
        return 0.0
    return (1 + beta * beta) * precision * recall / (beta * beta * precision + recall)


def choose_threshold(scores: np.ndarray, y: np.ndarray) -> float:
    """The threshold with the best F-beta, precision weighted above recall."""
    best, chosen = -1.0, 0.5
    for threshold in np.arange(0.05, 0.96, 0.01):
        value = f_beta(*precision_recall(scores >= threshold, y))
        if value > best:
            best, chosen = value, float(threshold)
    return round(chosen, 2)


def extra_rows(vectors: Vectors, restate: np.ndarray, kinds: keep.KindFn | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The older templated exchanges (memsift/data/keep_exchanges.jsonl), each alone, with
    nothing held: plain prototypes of a decision, an incident, a reaction, a UI tweak."""
    rows = keep.load_exchanges("keep_exchanges.jsonl")
    vectors.fill([t for r in rows for t in (r.user, r.assistant)])
    x = np.concatenate([keep.session_rows([keep.SessionExchange(r.user, r.assistant)],
                                          keep.Held(), vectors, restate, kinds) for r in rows])
    return x, np.asarray([r.keep for r in rows], np.float32)


def with_stack(head: keep.Head, oof: np.ndarray, y: np.ndarray, order: Sequence[Turn],
               projects: Sequence[str]) -> keep.Head:
    """The head and the keep cross-encoder stacked, on the tune projects: the cross-encoder
    was not trained on them (memsift.training.keep_cross), and the head's scores there are
    out of fold. Three weights, and the threshold chosen on the same exchanges."""
    tune = np.asarray([i < len(order) and tune_project(p) for i, p in enumerate(projects)])
    if len(set(y[tune].tolist())) < 2:
        return head  # no tune project with both kinds of exchange (a small corpus)
    exchanges = [keep.SessionExchange(t.user, t.assistant, t.reply_before)
                 for t, held_out in zip(order, tune) if held_out]
    cross = keep.cross_probability(exchanges)
    x = np.stack([keep.logit(oof[tune]), keep.logit(cross), np.ones(len(cross))], axis=1)
    stack = fit(x, y[tune], STACK_L2)
    threshold = choose_threshold(keep.sigmoid(x @ stack), y[tune])
    return keep.Head(head.keep, head.restate, threshold, head.restate_threshold,
                     stack.astype(np.float32), head.keep_threshold)


def train(corpus_root: Path = CORPUS, out: Path | None = None, extra: bool = True,
          cache: Path = VECTOR_CACHE, with_cross: bool = True, rule: bool = True,
          kinds_cache: Path = KINDS_CACHE) -> dict:
    """`rule`: train on the rule's labels and the keep-only sessions (the default); else on
    the session writers' labels (`--labels writers`)."""
    roots = keep_roots(corpus_root) if rule else (corpus_root,)
    turns = [t for t in read_corpus(roots, keep_labels=rule) if t.keep is not None]
    vectors = Vectors(cache)
    kinds = Kinds(kinds_cache)
    vectors.fill(sorted({s for t in turns for s in (t.user, t.assistant,
                                                     *(i.text for i in t.items))}))
    train_s = sessions_of([t for t in turns if t.split == "train"])
    val_s = sessions_of([t for t in turns if t.split == "val"])
    restate_x, restate_y, owner = restate_rows(train_s, vectors)
    restate_w = fit(restate_x, restate_y, RESTATE_L2, balanced=False)
    best, right, _ = best_per_exchange(keep.sigmoid(restate_x @ restate_w), restate_y, owner)
    restate_t = restate_threshold(best, right)
    x, order = keep_rows(train_s, vectors, restate_w, kinds)
    y = np.asarray([bool(t.keep) for t in order], np.float32)
    projects = [t.project for t in order]
    distinct = y.copy()
    if extra:
        x_extra, y_extra = extra_rows(vectors, restate_w, kinds)
        distinct = np.concatenate([y, y_extra])
        x = np.vstack([x] + [x_extra] * EXTRA_COPIES)
        y = np.concatenate([y] + [y_extra] * EXTRA_COPIES)
        projects += [f"extra-{i}" for i in range(len(y_extra))] * EXTRA_COPIES  # one fold each
    oof = out_of_fold(x, y, folds_of(projects), KEEP_L2)
    sessions = len(order)  # the threshold is read on sessions: chosen on their rows alone
    threshold = choose_threshold(oof[:sessions], y[:sessions])
    head = keep.Head(fit(x, y, KEEP_L2), restate_w, threshold, restate_t)
    if with_cross and KEEP_CROSS_FILE.exists():
        head = with_stack(head, oof, y, order, projects)
    report = evaluate(head, val_s, vectors, kinds)
    if head.stack is not None:
        report["keep_cross_sha256"] = file_hash(KEEP_CROSS_FILE)
    report.update(train_exchanges=len(distinct), train_keep=int(distinct.sum()),
                  train_sessions=len(train_s), train_projects=len({t.project for t in order}))
    path = out or keep.weights_path()
    keep.save(head, path)
    write_provenance(path, corpus_root, report, rule)
    return report


def evaluate(head: keep.Head, sessions: dict[str, list[Turn]], vectors: Vectors,
             kinds: keep.KindFn | None = None) -> dict:
    x, order = keep_rows(sessions, vectors, head.restate, kinds)
    y = np.asarray([bool(t.keep) for t in order], np.float32)
    probabilities, threshold = head.decide(
        x, [keep.SessionExchange(t.user, t.assistant, t.reply_before) for t in order])
    precision, recall = precision_recall(probabilities >= threshold, y)
    alone = precision_recall(head.keep_probability(x) >= head.alone_threshold, y)
    rx, ry, owner = restate_rows(sessions, vectors)
    best, right, any_ = best_per_exchange(head.restate_probability(rx), ry, owner)
    named = best >= head.restate_threshold
    r_precision = float((named & right).sum()) / max(1, int(named.sum()))
    r_recall = float((named & right).sum()) / max(1, int(any_.sum()))
    return {"val_exchanges": len(y), "val_keep": int(y.sum()), "val_sessions": len(sessions),
            "val_precision": round(precision, 3), "val_recall": round(recall, 3),
            "val_restate_precision": round(r_precision, 3),
            "val_restate_recall": round(r_recall, 3),
            "keep_threshold": head.keep_threshold, "restate_threshold": head.restate_threshold,
            "stacked_with_cross_encoder": head.stack is not None,
            "head_alone_precision": round(alone[0], 3), "head_alone_recall": round(alone[1], 3)}


def corpus_sha256(root: Path, rule: bool = False) -> str:
    """sha256 over the session files' paths (from the corpus folder) and bytes; with `rule`,
    also the keep-only sessions beside it and the keep labels file (what that training reads)."""
    digest = hashlib.sha256()
    for path in session_files((root,)):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    if not rule:
        return digest.hexdigest()
    for folder in keep_roots(root)[1:]:
        for path in session_files((folder,)):
            digest.update(str(path.relative_to(Path(root).parent)).encode())
            digest.update(path.read_bytes())
    labels = keep_labels_file(root)
    if labels.is_file():
        digest.update(labels.name.encode())
        digest.update(labels.read_bytes())
    return digest.hexdigest()


def _shown(root: Path) -> str:
    try:
        return str(Path(root).resolve().relative_to(REPO))
    except ValueError:
        return Path(root).name


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_provenance(weights: Path, corpus_root: Path, report: dict, rule: bool = True
                     ) -> None:
    provenance = {
        "weights": weights.name, "weights_sha256": file_hash(weights),
        "corpus_sha256": corpus_sha256(corpus_root, rule),
        "corpus": " + ".join(_shown(folder) for folder in
                             (keep_roots(corpus_root) if rule else (corpus_root,))),
        **({"keep_labels": _shown(keep_labels_file(corpus_root))} if rule else {}),
        "command": "python -m memsift.judge.train_keep" + ("" if rule else " --labels writers"),
        "trained": now_iso(),
        "python": platform.python_version(), "numpy": np.__version__,
        "embedding": MODEL_ID, **report,
    }
    weights.with_suffix(".json").write_text(json.dumps(provenance, indent=2) + "\n",
                                            encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out", type=Path, default=None, help="weights file to write")
    parser.add_argument("--labels", choices=("rule", "writers"), default="rule",
                        help="the rule's keep labels (corpus/keep-labels.jsonl and "
                             "corpus/keep-sessions: the shipped head) or the session writers'")
    args = parser.parse_args(argv)
    report = train(args.corpus, args.out, rule=args.labels == "rule")
    print(json.dumps(report, indent=2))
    met = report["val_precision"] >= TARGET and report["val_recall"] >= TARGET
    print(f"val precision {report['val_precision']} recall {report['val_recall']} "
          f"(target {TARGET}: {'met' if met else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
