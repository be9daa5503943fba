"""The offline keep decision on its labelled set, and the benchmark that prints it."""

from __future__ import annotations

import json

import pytest

from memsift.bench.keep import TARGET_PRECISION, TARGET_RECALL, eval_sets, main, measure
from memsift.judge.keep import held_apart, keep_probability, load_exchanges


def test_the_held_apart_part_is_whole_templates_never_trained_on():
    rows = load_exchanges()
    test_templates = {e.template for e in rows if held_apart(e)}
    train_templates = {e.template for e in rows if not held_apart(e)}
    assert test_templates and not test_templates & train_templates
    assert len(rows) >= 400 and sum(e.keep for e in rows if held_apart(e)) >= 30


@pytest.mark.parametrize("part", ["templates", "hand"])
def test_keep_decision_meets_its_precision_and_recall_on_exchanges_never_trained_on(part):
    result = measure(eval_sets()[part])
    assert result["exchanges"] >= 70
    assert result["precision"] >= TARGET_PRECISION
    assert result["recall"] >= TARGET_RECALL


def test_benchmark_prints_precision_and_recall_as_json(capsys):
    main(as_json=True)
    printed = json.loads(capsys.readouterr().out)["keep"]
    assert set(printed["hand"]) >= {"precision", "recall", "exchanges"}


def test_a_reaction_is_dropped_and_a_fix_with_its_cause_is_kept():
    assert keep_probability("thanks!", "You're welcome.") < 0.5
    assert keep_probability(
        "the worker crashes with RecursionError on the category tree",
        "The category import created a cycle. The fix was an iterative walk that tracks "
        "visited ids, so a cycle can no longer crash it.") >= 0.5
