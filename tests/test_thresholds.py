"""The cascade's policy on judged candidates (memsift.training.thresholds.decide), as the judge
trainer and `memsift bench --judge` count it: what each turn gets, and where each need that
got nothing was lost."""

from __future__ import annotations

import numpy as np

from memsift.judge.corpus import Item, Turn
from memsift.training.thresholds import decide

ITEMS = [Item("n1", "Money is integer cents.", "notes"),
         Item("n2", "Migrations are Alembic revisions.", "notes")]


def _turn(index: int, expect: set[str]) -> Turn:
    return Turn(session="s", project="p", split="val", index=index, user=f"message {index}",
                assistant="", kind="decision", expect=frozenset(expect), near=frozenset(),
                keep=None, fact="", restates=frozenset(), items=ITEMS)


def test_each_need_that_got_nothing_is_counted_where_it_was_lost():
    turns = [_turn(0, {"n1"}),  # found
             _turn(1, {"n1"}),  # gated: the kind said no search
             _turn(2, {"n1"}),  # judged, below the bar
             _turn(3, {"n2"}),  # n2 never judged: not among the candidates
             _turn(4, set())]  # needs nothing, gets something
    where = [(0, "n1"), (1, "n1"), (2, "n1"), (3, "n1"), (4, "n1")]
    scores = np.asarray([0.9, 0.9, 0.1, 0.1, 0.9])
    search_p = np.asarray([1.0, 0.0, 1.0, 1.0, 1.0])
    counts = decide(turns, scores, where, search_p, keep=0.5)
    assert counts == {"need": 4, "found": 1, "nothing": 1, "for_nothing": 1, "wrong": 0,
                      "gated": 1, "not_candidate": 1, "below_bar": 1}
