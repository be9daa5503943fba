"""How one answer position's top logprobs become a probability per option."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsift.judge.openai_compat import (
    MISSING_FLOOR,
    match_label,
    parse_answer,
    probabilities_from_logprobs,
)

LETTERS = ("A", "B", "C", "D")


def logprobs(top: dict[str, float]):
    """The shape the openai client parses: content[0] with its top_logprobs."""
    tops = [SimpleNamespace(token=t, logprob=lp) for t, lp in top.items()]
    first = max(tops, key=lambda t: t.logprob)
    return SimpleNamespace(content=[SimpleNamespace(token=first.token, logprob=first.logprob,
                                                    top_logprobs=tops)])


tokens = st.sampled_from(["A", " B", "c", "D)", "(A", "\u2581C", "The", "\n", "yes", "Sure", "E"])
tops = st.dictionaries(tokens, st.floats(min_value=-30, max_value=0), min_size=1, max_size=11)


@given(tops)
def test_probabilities_sum_to_one_and_follow_the_token_mass(top):
    result = probabilities_from_logprobs(logprobs(top), LETTERS)
    mass = {label: 0.0 for label in LETTERS}
    for token, lp in top.items():
        label = match_label(token, LETTERS)
        if label:
            mass[label] += math.exp(lp)
    if not any(mass.values()):
        assert result is None
        return
    assert result is not None
    assert math.isclose(sum(result.values()), 1.0)
    assert all(p > 0 for p in result.values())
    for a in LETTERS:
        for b in LETTERS:
            if mass[a] > mass[b] * 1.001 and mass[b] > 0:
                assert result[a] > result[b]


def test_an_option_missing_from_the_top_tokens_keeps_a_small_floor():
    result = probabilities_from_logprobs(logprobs({"A": math.log(0.9), "B": math.log(0.1)}),
                                         LETTERS)
    assert result["C"] == result["D"]
    assert 0 < result["C"] <= MISSING_FLOOR


def test_no_logprobs_gives_none():
    assert probabilities_from_logprobs(None, LETTERS) is None
    assert probabilities_from_logprobs(SimpleNamespace(content=[]), LETTERS) is None


@pytest.mark.parametrize("text,expected", [
    ("B", "B"), (" b", "B"), ("B) decision", "B"), ("(C)", "C"), ("**D**", "D"),
    ("The answer is B", None), ("", None), (None, None), ("Z", None),
])
def test_answer_text_is_read_from_its_first_word(text, expected):
    assert parse_answer(text, LETTERS) == expected


def test_yes_and_no_are_read_whatever_their_case():
    assert parse_answer("Yes.", ("yes", "no")) == "yes"
    assert parse_answer("NO", ("yes", "no")) == "no"
    assert parse_answer("yesterday", ("yes", "no")) is None
