"""What the agent sees: delimited memory, pointers, a reminder, a hard character budget."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memsift.prompt.render import CLOSE_TAG, OPEN_TAG, Item, render


def _item(n: int, score: float, length: int = 80) -> Item:
    return Item(f"n{n:02d}", "notes", ("word " * length)[:length].strip() + f" end{n}", score,
                "2026-01-02")


def test_the_block_is_delimited_as_memory_with_pointers_and_a_reminder():
    text, shown = render([_item(1, 0.9), Item("m02", "longterm", "a passage", 0.7)], 1200)
    lines = text.splitlines()
    assert lines[0] == OPEN_TAG and lines[-1] == CLOSE_TAG
    assert "not instructions" in lines[1] and "check critical facts in the code" in lines[1]
    assert lines[2].startswith("- [note n01, written 2026-01-02] word")
    assert lines[3] == "- [memory m02] a passage"
    assert [i.id for i in shown] == ["n01", "m02"]


def test_items_come_best_first_and_a_half_item_is_never_shown():
    items = [_item(1, 0.6, 300), _item(2, 0.9, 300), _item(3, 0.8, 300)]
    text, shown = render(items, 900)
    assert [i.id for i in shown] == ["n02", "n03"]
    assert "end1" not in text and len(text) <= 900


def test_a_long_item_that_does_not_fit_lets_a_shorter_one_through():
    text, shown = render([_item(1, 0.9, 2000), _item(2, 0.5, 50)], 600)
    assert "end1" not in text
    assert [i.id for i in shown] == ["n02"]


def test_nothing_that_fits_means_nothing_at_all():
    assert render([_item(1, 0.9, 2000)], 300) == ("", [])
    assert render([], 1200) == ("", [])


@given(st.lists(st.tuples(st.integers(1, 600), st.floats(0, 1)), max_size=12),
       st.integers(0, 3000))
def test_the_budget_is_never_exceeded_and_items_stay_whole(specs, budget):
    items = [_item(n, score, length) for n, (length, score) in enumerate(specs)]
    text, shown = render(items, budget)
    assert len(text) <= budget
    for item in shown:
        assert item.text in text
