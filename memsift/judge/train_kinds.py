"""Train the local judge's three small heads and write memsift/data/judge_local.npz.

    python -m memsift.judge.train_kinds

- kinds: softmax regression over [MiniLM embedding, cue features] on memsift/data/kinds.jsonl
  (hand-written coding-agent messages, 11 kinds, a fixed 25% held apart as split "test").
- item score: logistic calibration over pair features (cosine, shared words, shared identifiers,
  item length) on memsift/data/item_pairs.jsonl: each message with the note that answers it, a
  note on the same subject that does not, and the other messages' answers as easy negatives.
- worth keeping: logistic regression over [embedding, cue features] on memsift/data/worth.jsonl.

Only "train" rows are fitted; the benchmark (`memsift bench --judge`) reports on "test" rows.
Deterministic: full-batch gradient descent from zeros, no random state.
"""

from __future__ import annotations

import json

import numpy as np

from memsift.judge.base import KINDS
from memsift.judge.features import EMBED_SCALE, kind_features, pair_features, worth_features
from memsift.model.embed import MODEL_ID, embed
from memsift.paths import PACKAGE_DATA

DATA = PACKAGE_DATA
HEADS_FILE = DATA / "judge_local.npz"
KIND_L2 = 1e-2  # keeps 400 weights per kind from memorising 480 messages (4-fold CV)
PAIR_L2 = 1e-4
WORTH_L2 = 3e-3
STEPS = 800
EASY_NEGATIVES = 6  # other messages' answers paired with each message


def read_jsonl(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def fit_softmax(x: np.ndarray, y: np.ndarray, classes: int, l2: float,
                steps: int = STEPS, lr: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by Adam on the full batch."""
    w = np.zeros((x.shape[1], classes), dtype=np.float64)
    b = np.zeros(classes, dtype=np.float64)
    onehot = np.eye(classes)[y]
    m = [np.zeros_like(w), np.zeros_like(b)]
    v = [np.zeros_like(w), np.zeros_like(b)]
    for step in range(1, steps + 1):
        probs = softmax(x @ w + b)
        grad_logits = (probs - onehot) / len(x)
        grads = [x.T @ grad_logits + l2 * w, grad_logits.sum(axis=0)]
        for i, (param, grad) in enumerate(zip((w, b), grads)):
            m[i] = 0.9 * m[i] + 0.1 * grad
            v[i] = 0.999 * v[i] + 0.001 * grad * grad
            m_hat, v_hat = m[i] / (1 - 0.9 ** step), v[i] / (1 - 0.999 ** step)
            param -= lr * m_hat / (np.sqrt(v_hat) + 1e-8)
    return w.astype(np.float32), b.astype(np.float32)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def kind_matrix(texts: list[str]) -> np.ndarray:
    return np.hstack([embed(texts) * EMBED_SCALE, np.vstack([kind_features(t) for t in texts])])


def worth_matrix(texts: list[str]) -> np.ndarray:
    return np.hstack([embed(texts) * EMBED_SCALE, np.vstack([worth_features(t) for t in texts])])


def pair_rows(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and labels: answer 1, same-subject note 0, other answers 0."""
    messages = [r["message"] for r in rows]
    answers = [r["answer"] for r in rows]
    hard = [r["same_subject"] for r in rows]
    mv, av, hv = embed(messages), embed(answers), embed(hard)
    feats, labels = [], []
    for i, row in enumerate(rows):
        feats.append(pair_features(float(mv[i] @ av[i]), row["message"], answers[i]))
        labels.append(1)
        feats.append(pair_features(float(mv[i] @ hv[i]), row["message"], hard[i]))
        labels.append(0)
        for k in range(1, EASY_NEGATIVES + 1):
            j = (i + k * 7) % len(rows)
            if j != i:
                feats.append(pair_features(float(mv[i] @ av[j]), row["message"], answers[j]))
                labels.append(0)
    return np.vstack(feats), np.asarray(labels)


def best_threshold(probs: np.ndarray, labels: np.ndarray) -> float:
    """The threshold with the best F1 (ties: the higher, fewer additions for nothing)."""
    best, best_f1 = 0.5, -1.0
    for t in np.round(np.arange(0.05, 0.96, 0.01), 2):
        kept = probs >= t
        tp = float((kept & (labels == 1)).sum())
        f1 = 2 * tp / max(1.0, kept.sum() + (labels == 1).sum())
        if f1 >= best_f1:
            best, best_f1 = float(t), f1
    return best


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def train() -> dict:
    kinds = [r for r in read_jsonl("kinds.jsonl") if r["split"] == "train"]
    x = kind_matrix([r["text"] for r in kinds])
    kind_w, kind_b = fit_softmax(x, np.asarray([KINDS.index(r["kind"]) for r in kinds]),
                                 len(KINDS), KIND_L2)
    pairs = [r for r in read_jsonl("item_pairs.jsonl") if r["split"] == "train"]
    px, py = pair_rows(pairs)
    pair_w, pair_b = fit_softmax(px, py, 2, PAIR_L2, lr=0.1, steps=2000)
    threshold = best_threshold(softmax(px @ pair_w + pair_b)[:, 1], py)
    worth = [r for r in read_jsonl("worth.jsonl") if r["split"] == "train"]
    wx = worth_matrix([r["text"] for r in worth])
    worth_w, worth_b = fit_softmax(wx, np.asarray([int(r["keep"]) for r in worth]), 2, WORTH_L2)
    heads = {"kind_w": kind_w, "kind_b": kind_b, "pair_w": pair_w, "pair_b": pair_b,
             "worth_w": worth_w, "worth_b": worth_b, "score_threshold": np.float32(threshold),
             "model_id": np.asarray(MODEL_ID), "kinds": np.asarray(KINDS)}
    np.savez(HEADS_FILE, **heads)
    return heads


def main() -> None:
    heads = train()
    print(f"wrote {HEADS_FILE.name}; item score threshold (best F1 on train pairs): "
          f"{float(heads['score_threshold']):.2f}")


if __name__ == "__main__":
    main()
