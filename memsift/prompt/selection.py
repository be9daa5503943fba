"""What the cascade adds, once its steps have kept items: the conversation filter (what the
agent already has: items given earlier this session, items whose words the session holds),
the second item only when nearly as sure as the best, fresher items first within the judge's
noise (docs/lifecycle.md), the rules the message's subject brings up, and the render budget."""

from __future__ import annotations

from pathlib import Path

from memsift.audit import ItemRecord
from memsift.clock import Deadline
from memsift.held import HELD_FRACTION, distinctive_words, held_fraction
from memsift.memory.lifecycle import rank, rules_budget, rules_for
from memsift.prompt.conversation import recent_text
from memsift.prompt.render import Item, render

TRANSCRIPT_S = 0.2  # reading the tail of the transcript file
NEAR_BEST_SHARE = 0.4  # a second item only when the judge is nearly as sure of it as the best
MAX_ITEMS = 2  # a few lines: more reminders dilute the one that matters
SAME_ITEM_FRACTION = 0.7  # a passage that restates a kept note adds nothing


class Selection:
    """The last part of a cascade (cascade.py), from the kept items to the added text."""

    def finish(self, plan) -> tuple[str, list[Item]]:
        items = self._conversation_filter(plan.kept) if plan.kept else []
        items = self._lifecycle_order(near_best(items, self.keep_score) if items else [])
        items = items[:MAX_ITEMS]
        items = self._with_rules(items)
        begin = self.clock()
        text, shown = render(items, int(self.settings["budget.chars"]))
        self._record("render", self._ms(begin), f"{len(shown)} items" if shown else "nothing")
        self.decision.added = [ItemRecord(i.id, i.source, i.score, i.written) for i in shown]
        self.decision.chars = len(text)
        return text, shown

    def _not_restating(self, items: list[Item], kept: list[Item]) -> list[Item]:
        """Drop passages that say what a kept note already says."""
        words = set().union(*(distinctive_words(k.text) for k in kept)) if kept else set()
        return [i for i in items if not words or held_fraction(i.text, words) < SAME_ITEM_FRACTION]

    def _conversation_filter(self, items: list[Item]) -> list[Item]:
        """Drop what the agent already has: items added earlier in this session (its context
        holds them) and items whose words the session's text mostly holds."""
        given = self._already_added()
        items = [i for i in items if i.id not in given]
        turns = self._timed("conversation", TRANSCRIPT_S, self._read_turns, quiet=True)
        words = distinctive_words(recent_text(turns, self.full_prompt)) if turns else set()
        fresh = [i for i in items if held_fraction(i.text, words) < HELD_FRACTION]
        dropped = len(items) - len(fresh)
        if turns is not None:
            self._amend("conversation", f"{dropped} dropped, {len(given)} given before")
        return fresh

    def _already_added(self) -> set[str]:
        """Ids of the items this session's earlier prompts were given (read once)."""
        if self._given is None:
            from memsift.audit import session_added

            try:
                self._given = session_added(self.event.session_id, str(self.root),
                                            self.settings.paths.audit_file)
            except OSError as exc:
                self.decision.error("conversation", f"audit unreadable: {exc}")
                self._given = set()
        return self._given

    def _read_turns(self, deadline: Deadline):
        if not self.event.transcript_path or not Path(self.event.transcript_path).exists():
            self._pending = "no transcript"
            return []
        from memsift.hosts import adapter_for

        turns = adapter_for(self.event.host).read_transcript(self.event.transcript_path)
        self._pending = f"{len(turns)} turns"
        return turns

    def _lifecycle_order(self, items: list[Item]) -> list[Item]:
        """Score order, where judge scores within a band tie the fresher item goes first."""
        from memsift.clock import now
        from memsift.memory.consolidate import note_states

        try:
            states = note_states(self.settings, self.root)
        except Exception as exc:  # noqa: BLE001 - no state: salience alone sets the curve
            self.decision.error("lifecycle", str(exc))
            states = {}
        return rank(items, {i.id: i.score for i in items}, now(), states)

    def _with_rules(self, items: list[Item]) -> list[Item]:
        """Rules whose subject the message brings up, whatever its kind and however sure the
        judge is, within their own share of the character budget."""
        if not self.event.prompt.strip():
            return items
        begin = self.clock()
        try:
            notes, _ = self.all_notes()
            share = rules_budget(int(self.settings["budget.chars"]))
            rules = rules_for(self.event.prompt, notes, share)
        except Exception as exc:  # noqa: BLE001 - rules are extra: fail without them
            self.decision.error("rules", f"{type(exc).__name__}: {exc}")
            return items
        self._record("rules", self._ms(begin), f"{len(rules)} rules" if rules else "none")
        keys = {r.key for r in rules}
        return ([Item(r.key, "rule", r.text, 1.0, r.written) for r in rules]
                + [i for i in items if i.id not in keys])


def near_best(items: list[Item], keep: float) -> list[Item]:
    best = max((i.score for i in items), default=0.0)
    return [i for i in items if i.score >= best - NEAR_BEST_SHARE * (1.0 - keep)]
