"""What the pass does with each pending exchange, against what the project holds: the
keeper's decision and note, then a held note the exchange repeats is reinforced, one it
corrects superseded, one a passage already holds left out, and what is written is held from
there on (memsift.session_end.held). A failing model hands the rest of the pass to the
offline keeper."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memsift.log import log
from memsift.session_end.exchange import Exchange, SessionView
from memsift.session_end.keepers import OfflineKeeper, offline_note

ADD, SUPERSEDE, REINFORCE, HELD, SKIP = "add", "supersede", "reinforce", "held", "skip"


@dataclass
class Decision:
    """What the pass does with one exchange: a new note (ADD), a note replacing the one it
    changes (SUPERSEDE), a held note it repeats made stronger (REINFORCE), nothing because a
    passage already holds it (HELD), or nothing (SKIP)."""

    exchange: Exchange
    keep: bool
    action: str
    text: str = ""
    restates: Any = None  # memsift.session_end.held.HeldItem


def decide(view: SessionView, pending: Sequence[Exchange], keeper) -> list[Decision]:
    """The keep decision and the note for each pending exchange, judged with what the
    project held before and what this pass wrote. If the model fails, the rest of the pass
    uses the offline keeper: the state moves on, so an exchange left out would never come
    back."""
    from memsift.judge import keep
    from memsift.judge.base import JudgeError

    head = keep.load_head()
    _begin(keeper, view, pending)
    decisions = []
    for exchange in pending:
        try:
            text = _decide_and_write(keeper, exchange)
        except JudgeError as exc:
            log("warning", "the model failed, offline keep decision used instead",
                turn=exchange.turn, error=str(exc))
            keeper = OfflineKeeper()
            _begin(keeper, view, pending)
            text = _decide_and_write(keeper, exchange)
        text = "" if text.strip().upper() == "NONE" else text
        item = view.restated(head, exchange)
        if not text and _corrects(exchange, item):
            text = offline_note(exchange)  # a held note the user corrects: the new version
        decision = _against_held(exchange, text, item)
        if decision.action == ADD:
            decision = _note_against_held(view, head, decision)
        if decision.action in (ADD, SUPERSEDE):
            _hold(view, decision.text)
        decisions.append(decision)
    return decisions


def _begin(keeper, view: SessionView, pending: Sequence[Exchange]) -> None:
    if hasattr(keeper, "begin"):
        keeper.begin(view, pending)


def _corrects(exchange: Exchange, item) -> bool:
    """The user says a held note is no longer so ("actually we moved from X to Y")."""
    from memsift.memory.lifecycle import SUPERSEDING_ACTS, classify_act
    from memsift.session_end.held import NOTES

    return (item is not None and item.source == NOTES
            and classify_act(exchange.user) in SUPERSEDING_ACTS)


def _against_held(exchange: Exchange, text: str, item) -> Decision:
    """A note only for what is not held yet: a held note the exchange repeats is reinforced
    or, when the exchange changes it, superseded; beside a passage it repeats, a note only
    when the keep decision (which weighed the passage already) still keeps it."""
    from memsift.memory.lifecycle import SUPERSEDING_ACTS, classify_act
    from memsift.session_end.held import NOTES

    if item is None:
        return Decision(exchange, bool(text), ADD if text else SKIP, text)
    # the person says the held note changed; a reply's "replaced X with Y" is code, not that
    changes = bool(text) and classify_act(exchange.user) in SUPERSEDING_ACTS
    if item.source == NOTES:
        if changes:
            return Decision(exchange, True, SUPERSEDE, text, item)
        return Decision(exchange, bool(text), REINFORCE, "", item)
    if text:  # a passage is broader and older: what the head still keeps is news beside it
        return Decision(exchange, True, ADD, text, item)
    return Decision(exchange, False, HELD, "", item)


def _note_against_held(view: SessionView, head, decision: Decision) -> Decision:
    """The composed note itself, checked against what is held: a note that says what a
    held note or passage says is not written (the held note is reinforced)."""
    from memsift.session_end.held import NOTES, words_of

    vector = view.embed([decision.text])[0]
    item = view.memory.restated(head, vector, vector, words_of(decision.text, ""))
    if item is None:
        return decision
    exchange = decision.exchange
    if item.source != NOTES:
        return Decision(exchange, True, HELD, "", item)
    return _against_held(exchange, decision.text, item)


def _hold(view: SessionView, text: str) -> None:
    """A note written now is held from here on: the session saying it again keeps it once."""
    from memsift.memory.notes import text_id
    from memsift.session_end.held import NOTES, HeldItem

    view.memory.add(HeldItem(text_id(text), text, NOTES), view.embed([text])[0])


def _decide_and_write(keeper, exchange: Exchange) -> str:
    return keeper.write_note(exchange) if keeper.worth_keeping(exchange) else ""
