"""`memsift bench --keep`: precision and recall of the offline keep decision.

Measured on the held-apart part of memsift/data/keep_exchanges.jsonl: whole templates the
head never saw in training, so the numbers are about wording it has not met.
"""

from __future__ import annotations

import json
import time

from memsift.judge.keep import KEEP_THRESHOLD, held_apart, keep_probability, load_exchanges

TARGET_PRECISION = 0.85  # a bad note costs every future session: few false keeps
TARGET_RECALL = 0.75  # a missed note costs only a repeat of the work once


def measure(threshold: float = KEEP_THRESHOLD) -> dict[str, float]:
    test = [e for e in load_exchanges() if held_apart(e)]
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


def main(as_json: bool = False) -> dict[str, float]:
    result = measure()
    if as_json:
        print(json.dumps({"keep": result}))
    else:
        print(f"keep decision on {result['exchanges']} held-apart exchanges "
              f"({result['to_keep']} to keep): precision {result['precision']:.3f} "
              f"(target {TARGET_PRECISION}), recall {result['recall']:.3f} "
              f"(target {TARGET_RECALL}), {result['ms_per_exchange']:.2f} ms each")
    return result


if __name__ == "__main__":
    main()
