"""The judge trainer's numpy parts: the cascade's policy on judged candidates
(memsift.training.thresholds.decide), as the trainer and `memsift bench --judge` count it,
with where each need that got nothing was lost; and item heads merged into one."""

from __future__ import annotations

import numpy as np

from memsift.judge.corpus import Item, Turn
from memsift.training.thresholds import decide

ITEMS = [Item("n1", "Money is integer cents.", "notes"),
         Item("n2", "Migrations are Alembic revisions.", "notes")]


def _turn(index: int, expect: set[str], items: list[Item] | None = None,
          held: frozenset[str] = frozenset()) -> Turn:
    """A turn of its own session, unless `items` (one session's list) is shared."""
    return Turn(session="s", project="p", split="val", index=index, user=f"message {index}",
                assistant="", kind="decision", expect=frozenset(expect), near=frozenset(),
                keep=None, fact="", restates=frozenset(),
                items=list(ITEMS) if items is None else items, held=held)


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
                      "gated": 1, "not_candidate": 1, "below_bar": 1, "dropped": 0}


def test_what_the_session_already_holds_is_dropped_as_the_cascade_drops_it():
    """The conversation filter (prompt/selection.py): an item added at an earlier turn of the
    same session, or one whose words the session's text holds, is not added again."""
    session = list(ITEMS)
    turns = [_turn(0, {"n1"}, session),  # found, and so given
             _turn(1, set(), session),  # n1 again: the session has it, nothing added
             _turn(2, {"n1"}, session),  # needed again, but given: dropped
             _turn(3, {"n2"}, session, held=frozenset({"n2"})),  # its words were said: dropped
             _turn(4, set(), held=frozenset())]  # another session: n1 is added for nothing
    where = [(n, "n1" if n != 3 else "n2") for n in range(5)]
    counts = decide(turns, np.full(5, 0.9), where, np.ones(5), keep=0.5)
    assert (counts["found"], counts["dropped"], counts["for_nothing"]) == (1, 2, 1)


def test_merged_item_heads_give_the_mean_of_their_logits():
    from memsift.judge.local import _logit, _mlp
    from memsift.training.judge import merge_heads

    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 5)).astype(np.float32)
    heads = [{"w1": rng.normal(size=(5, 3)).astype(np.float32),
              "b1": rng.normal(size=3).astype(np.float32),
              "w2": rng.normal(size=(3, 1)).astype(np.float32),
              "b2": rng.normal(size=1).astype(np.float32),
              "mean": np.zeros(5, np.float32), "std": np.ones(5, np.float32)}
             for _ in range(3)]

    def logits(head):
        return _logit(_mlp({f"item_{k}": v for k, v in head.items()}, x))

    mean = np.mean([logits(h) for h in heads], axis=0)
    assert np.allclose(logits(merge_heads(heads)), mean, atol=1e-4)
    assert not np.allclose(logits(heads[0]), mean, atol=1e-2)  # the heads do differ


def test_the_trainer_reads_each_group_relative_to_its_own_best_as_the_hook_does():
    from memsift.judge.local import group_relative
    from memsift.training.stack import relative_rows

    passages = [Item("m1", "Webhooks are verified with HMAC.", "longterm")]
    turns = [Turn(session="s", project="p", split="val", index=0, user="u", assistant="",
                  kind="decision", expect=frozenset(), near=frozenset(), keep=None, fact="",
                  restates=frozenset(), items=ITEMS + passages)]
    where = [(0, "n1"), (0, "m1"), (0, "n2")]
    first = np.asarray([0.2, 0.9, 0.6])
    rows = [0, 1, 2]
    second = np.asarray([0.7, 0.1, 0.4])
    rel_a, rel_b = relative_rows(turns, where, rows, first, second)
    notes_a, notes_b = group_relative(first[[0, 2]], second[[0, 2]])  # the notes group alone
    assert np.allclose(rel_a[[0, 2]], notes_a) and np.allclose(rel_b[[0, 2]], notes_b)
    assert rel_a[1] == 0 and rel_b[1] == 0  # the only passage is its group's best
    assert rel_a[0] < 0 and rel_b[0] == 0  # n1 trails n2 on the first head, leads on the second


def test_the_passage_share_is_chosen_with_the_threshold_on_what_it_finds():
    from memsift.training.thresholds import choose_policy

    items = ITEMS + [Item("m1", "Exports go to the archive bucket.", "longterm")]
    turns = [Turn(session="s", project="p", split="train", index=n, user=f"m {n}", assistant="",
                  kind="decision", expect=frozenset(expect), near=frozenset(), keep=None,
                  fact="", restates=frozenset(), items=items)
             for n, expect in enumerate(({"m1"}, set()))]
    # the passage answers at 0.55; a note scored 0.25 answers a turn that needs nothing, so
    # the threshold must pass 0.25, and at 0.26 a passage needs 0.556 with a share of 0.4
    where = [(0, "m1"), (0, "n1"), (1, "n1")]
    scores = np.asarray([0.55, 0.1, 0.25])
    search_p = np.asarray([1.0, 1.0])
    assert choose_policy(turns, scores, where, search_p, shares=(0.4,)) == (0.26, 0.4)
    assert decide(turns, scores, where, search_p, 0.26, passage_share=0.4)["found"] == 0
    # 0.25, 0.1 and 0 all find it: the strictest of them is chosen
    assert choose_policy(turns, scores, where, search_p) == (0.26, 0.25)


def test_the_item_models_leave_out_near_items_the_session_gave_already():
    """A near item of a turn that expects nothing, where the session had given it, may answer
    the message: it is no example of a same-subject item that does not (corpus.answered_before)."""
    from memsift.training.judge import unambiguous

    given = Turn(session="s", project="p", split="train", index=3, user="how long again?",
                 assistant="", kind="earlier_exchange", expect=frozenset(),
                 near=frozenset({"n1", "n2"}), keep=None, fact="", restates=frozenset(),
                 items=list(ITEMS), why="n1 was given at turn 1", held=frozenset())
    plain = Turn(session="s", project="p", split="train", index=4, user="which queue?",
                 assistant="", kind="decision", expect=frozenset(), near=frozenset({"n2"}),
                 keep=None, fact="", restates=frozenset(), items=list(ITEMS),
                 why="nothing stored decides it", held=frozenset({"n2"}))
    where = [(0, "n1"), (0, "n2"), (1, "n1"), (1, "n2")]
    # the writer's word leaves out both near items of the first; the filter's the held one
    assert unambiguous([given, plain], where).tolist() == [False, False, True, False]


def test_the_threshold_must_hold_on_the_long_sessions_alone_as_well():
    """Short sessions' many turns that need nothing can hide a long session's additions for
    nothing; the threshold keeps under the share on the long sessions too (by_shape)."""
    from memsift.training.thresholds import LONG_SESSION_TURNS, by_shape, choose_threshold

    notes = [Item(f"n{k}", f"note {k}", "notes") for k in range(1, 7)]

    def session(name: str, length: int, expect: set[str]) -> list[Turn]:
        return [Turn(session=name, project=name, split="train", index=n, user=f"m {n}",
                     assistant="", kind="decision", expect=frozenset(expect if n == 0 else ()),
                     near=frozenset(), keep=None, fact="", restates=frozenset(), items=notes)
                for n in range(length)]

    # a long session whose first five turns each get another note at 0.3 for nothing (5 of
    # 60, over 6%), and twenty short ones whose first turn finds its note at 0.8
    turns = session("long", LONG_SESSION_TURNS, set())
    turns += [t for k in range(20) for t in session(f"short{k}", 5, {"n1"})]
    where = [(n, f"n{n + 2}") for n in range(5)]
    where += [(n, "n1") for n, t in enumerate(turns) if t.expect]
    scores = np.asarray([0.3] * 5 + [0.8] * 20)
    search_p = np.ones(len(turns))
    parts = by_shape(turns, scores, where, search_p)
    assert [len(p[0]) for p in parts] == [len(turns), LONG_SESSION_TURNS]
    assert parts[1][2] == where[:5] and parts[1][1].tolist() == [0.3] * 5
    whole = decide(turns, scores, where, search_p, 0.05)
    assert whole["for_nothing"] == 5 and 5 <= 0.06 * whole["nothing"]  # the whole allows 0.05
    assert choose_threshold(turns, scores, where, search_p) == 0.31  # the long session not


def test_listwise_batches_keep_each_turn_whole_and_pad_with_rows_that_weigh_nothing():
    """--listwise reads a batch as whole turns (training/cross.turn_batches): each row knows
    its turn's number within the batch, the rest of the batch weighs 0, and a turn longer
    than a batch keeps its answers."""
    from itertools import islice

    from memsift.training.cross import turn_batches

    labels_of = [[0.0, 1.0, 0.0], [0.0] * 4, [1.0, 0.0], [0.0] * 6 + [1.0]]
    turns = [[([101, which, k], [0, 0, 1], label) for k, label in enumerate(labels)]
             for which, labels in enumerate(labels_of)]
    seen = set()
    for batch in islice(turn_batches(turns, 5), 12):
        assert len(batch) == 5
        real = [row for row in batch if row[2][2] == 1.0]
        assert batch[len(real):] == [(batch[len(real) - 1][0], batch[len(real) - 1][1],
                                      (0.0, 4, 0.0))] * (5 - len(real))
        numbers = [row[2][1] for row in real]
        assert numbers == sorted(numbers) and numbers[0] == 0
        for number in set(numbers):
            rows = [row for row in real if row[2][1] == number]
            which = {row[0][1] for row in rows}
            assert len(which) == 1  # one turn under one number, and all of it
            which = which.pop()
            seen.add(which)
            want = sorted(label for label in labels_of[which])[::-1][:5]
            assert sorted((row[2][0] for row in rows), reverse=True) == want
    assert seen == {0, 1, 2, 3}
