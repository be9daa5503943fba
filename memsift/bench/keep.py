"""`memsift bench --keep`: precision and recall of the offline keep decision.

Measured on two sets the head never trained on: the held-apart part of
memsift/data/keep_exchanges.jsonl (whole templates it never saw) and
memsift/data/keep_exchanges_hand.jsonl (72 exchanges written one by one, none from a template,
never used in training), so the numbers are about wording it has not met.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path

from memsift.judge.keep import (
    KEEP_THRESHOLD,
    Exchange,
    held_apart,
    keep_probability,
    load_exchanges,
)

TARGET_PRECISION = 0.85  # a bad note costs every future session: few false keeps
TARGET_RECALL = 0.75  # a missed note costs only a repeat of the work once


def eval_sets() -> dict[str, list[Exchange]]:
    hand = Path(str(resources.files("memsift.data").joinpath("keep_exchanges_hand.jsonl")))
    return {"templates": [e for e in load_exchanges() if held_apart(e)],
            "hand": load_exchanges(hand)}


def measure(test: list[Exchange], threshold: float = KEEP_THRESHOLD) -> dict[str, float]:
    started = time.perf_counter()
    predicted = [keep_probability(e.user, e.assistant) >= threshold for e in test]
    elapsed = time.perf_counter() - started
    tp = sum(1 for e, p in zip(test, predicted) if p and e.keep)
    fp = sum(1 for e, p in zip(test, predicted) if p and not e.keep)
    fn = sum(1 for e, p in zip(test, predicted) if not p and e.keep)
    return {
        "exchanges": len(test),
        "to_keep": sum(e.keep for e in test),
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "ms_per_exchange": 1000 * elapsed / max(1, len(test)),
        "threshold": threshold,
    }


def main(as_json: bool = False) -> dict[str, dict[str, float]]:
    results = {name: measure(rows) for name, rows in eval_sets().items()}
    if as_json:
        print(json.dumps({"keep": results}))
        return results
    for name, result in results.items():
        print(f"keep decision, {name} ({result['exchanges']} exchanges never trained on, "
              f"{result['to_keep']} to keep): precision {result['precision']:.3f} "
              f"(target {TARGET_PRECISION}), recall {result['recall']:.3f} "
              f"(target {TARGET_RECALL}), {result['ms_per_exchange']:.2f} ms each")
    return results


if __name__ == "__main__":
    main()
