"""The second stage of the judge's item scores in training: the best CROSS_TOP candidates of
each group by the item head, read by the cross-encoder (model/cross.py, trained by
training/cross.py), and the stack that combines both heads' scores on them (its inputs are the
hook's own, memsift.judge.local.stack_inputs), fitted on the tune projects."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsift.judge.corpus import Turn
from memsift.judge.local import group_relative, stack_inputs
from memsift.training.thresholds import group_of

CROSS_TOP = 4  # candidates per group the cross-encoder reads: ~110 ms for 8 in a hook process
STACK_STEPS = 2000


def top_rows(turns: Sequence[Turn], where: list[tuple[int, str]], first: np.ndarray) -> list[int]:
    """Indices of the CROSS_TOP best rows by the first head in each (turn, group)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for row, (n, item_id) in enumerate(where):
        groups.setdefault(group_of(turns, n, item_id), []).append(row)
    picked = []
    for rows in groups.values():
        picked += sorted(rows, key=lambda r: -first[r])[:CROSS_TOP]
    return sorted(picked)


def cross_scores(turns: Sequence[Turn], where, rows: list[int], path: Path) -> np.ndarray:
    """The cross-encoder's probability for the given rows (JAX: the same forward as numpy)."""
    from memsift.model.cross import pair_ids
    from memsift.training.cross import outputs

    text = {(n, i.id): i.text for n, t in enumerate(turns) for i in t.items}
    pairs = []
    for r in rows:
        n, item_id = where[r]
        ids, types = pair_ids(turns[n].user, turns[n].reply_before, text[(n, item_id)])
        pairs.append((ids, types, 0.0))
    if not pairs:
        return np.zeros(0)
    return 1.0 / (1.0 + np.exp(-outputs(path, pairs, batch=32)[:, 0]))


def relative_rows(turns: Sequence[Turn], where, rows: list[int], first: np.ndarray,
                  second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """group_relative for the rows the cross-encoder read, each (turn, group) apart, as the
    hook computes it for the one group it scores. `first` is the first head's for all rows,
    `second` the cross-encoder's for `rows`."""
    groups: dict[tuple[int, str], list[int]] = {}
    for k, r in enumerate(rows):
        groups.setdefault(group_of(turns, *where[r]), []).append(k)
    rel_a, rel_b = np.zeros(len(rows)), np.zeros(len(rows))
    for ks in groups.values():
        rel_a[ks], rel_b[ks] = group_relative(first[[rows[k] for k in ks]], second[ks])
    return rel_a, rel_b


def stacked(first: np.ndarray, rows: list[int], second: np.ndarray, w: np.ndarray,
            b: np.ndarray, turns, where, need: np.ndarray | None = None,
            relative: bool = False) -> np.ndarray:
    """Final scores: the stack on the rows the cross-encoder read; every other candidate of
    a group stays below the lowest of those (it ranked under them on the first head).
    `need`: the kind encoder's need for memory of each of those rows' turns, when the stack
    reads it; `relative`: the stack reads the logits relative to the group's best too."""
    final = first.copy()
    rel = relative_rows(turns, where, rows, first, second) if relative else None
    on = 1.0 / (1.0 + np.exp(-(stack_inputs(first[rows], second, need, rel) @ w + b)))
    final[rows] = on
    floor: dict[tuple[int, str], float] = {}
    for r, value in zip(rows, on):
        key = group_of(turns, *where[r])
        floor[key] = min(floor.get(key, 1.0), float(value))
    chosen = set(rows)
    for r, (n, item_id) in enumerate(where):
        if r not in chosen:
            key = group_of(turns, n, item_id)
            final[r] = min(first[r], floor.get(key, first[r]))
    return final


def fit_stack(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from memsift.judge.train_kinds import fit_softmax

    w, b = fit_softmax(x, y.astype(int), 2, 1e-3, steps=STACK_STEPS, lr=0.05)
    return (w[:, 1] - w[:, 0]).astype(np.float32), np.float32(b[1] - b[0])
