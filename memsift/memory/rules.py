"""Rules (team rules, hard constraints): added whenever their subject comes up, whatever the
message's kind, within their own share of the character budget. docs/lifecycle.md."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from memsift.memory.acts import is_rule
from memsift.memory.notes import Note
from memsift.memory.supersede import visible
from memsift.memory.terms import key_terms

T = TypeVar("T")

# --- rules -----------------------------------------------------------------------------------

RULE_CUE_WORDS = frozenset({"never", "always", "must", "rule", "team", "hard", "constraint",
                            "policy", "don't", "not"})
RULE_MIN_TERMS = 2  # two of the rule's subject words in the message: its subject came up
RULE_SUBJECT_SHARE = 0.6  # and most of them: "DAG" and "dbt_daily" alone are not "backfilling
#                           dbt_daily", three of its four words are
RULE_COS = 0.45  # or one shared word and an embedding this close (a paraphrased subject)
_CLAUSE_END = re.compile(r"[.;:,](\s|$)|\s[-\u2013\u2014]\s")
RULES_SHARE = 0.3  # of budget.chars: rules are short lines and must leave room for the answer


def rule_terms(note: Note) -> frozenset[str]:
    """The rule's subject: the words of its first clause, the imperative itself ("Never apply
    terraform on a Friday"), without the reason that follows it."""
    match = _CLAUSE_END.search(note.text)
    clause = note.text[: match.start()] if match else note.text
    return key_terms(clause) - RULE_CUE_WORDS


def rule_applies(note: Note, message: str, cos: float | None = None) -> bool:
    subject = rule_terms(note)
    shared = subject & key_terms(message)
    if len(shared) >= RULE_MIN_TERMS and len(shared) >= RULE_SUBJECT_SHARE * len(subject):
        return True
    return bool(shared) and cos is not None and cos >= RULE_COS


def rules_for(message: str, notes: Sequence[Note], budget_chars: int | None = None,
              similarity: Callable[[Note], float | None] | None = None) -> list[Note]:
    """The visible rules whose subject the message brings up, most specific first, as many as
    fit in `budget_chars` (the rules' share of the block; None: no limit)."""
    rules = [n for n in notes if is_rule(n)]  # rare: the hidden set is built only if any
    if not rules:
        return []
    found = []
    for note in visible(notes):
        if not is_rule(note):
            continue
        cos = similarity(note) if similarity else None
        if rule_applies(note, message, cos):
            found.append((len(rule_terms(note) & key_terms(message)), note))
    found.sort(key=lambda pair: (-pair[0], len(pair[1].text)))
    chosen, used = [], 0
    for _, note in found:
        if budget_chars is not None and used + len(note.text) > budget_chars:
            continue
        chosen.append(note)
        used += len(note.text)
    return chosen


def rules_budget(total_chars: int) -> int:
    return int(total_chars * RULES_SHARE)
