"""The typed decision API's early fan-out for a cascade (cascade.py): the kind question asks
"worth a search?" in the same request, and the notes' judging and (from the embedded store)
the search and the passages' judging start on threads beside it, each one round trip to the
remote judge. The prompt waits about one round trip after the message's embedding, not four;
items judged for a prompt whose kind needs no memory, or whose notes answered, cost tokens, not
time. The steps take these results, or do the work themselves once the judge changed."""

from __future__ import annotations

from memsift.clock import Deadline
from memsift.config import MAX_SEARCH_S
from memsift.prompt.policy import DECISION_KIND_S, KIND_S, NOTES_S
from memsift.prompt.render import Item
from memsift.prompt.steps import Early


class EarlyWork:
    """The work a cascade starts beside the kind question. The subclass sets `settings`,
    `event`, `deadline`, `_store`, `_llm_fallback` and the `_early_*` results, and gives
    `judge`, `store`, `query_vector`, `_search`, `scored_notes` and `scored_passages`."""

    def _kind_budget(self, judge) -> float:
        return DECISION_KIND_S if hasattr(judge, "kind_and_worth") else KIND_S

    def _kind(self, deadline: Deadline) -> dict[str, float]:
        """The kind; from a typed decision API, with "worth a search?" in the same request."""
        judge = self.judge
        if not hasattr(judge, "kind_and_worth"):
            return judge.kind(self.event.prompt, deadline)
        kinds, self._early_worth = judge.kind_and_worth(self.event.prompt, deadline)
        return kinds

    def _start_early(self) -> None:
        """Judge the notes, and search the embedded store and judge its passages, on threads
        now, beside the kind question: each is one round trip to the remote judge. Their
        steps take the results (or do the work themselves). A Cognee server is asked only
        when its step comes: its health decides that step."""
        notes_deadline = self.deadline.sub(DECISION_KIND_S + NOTES_S)

        def notes() -> list[Item]:
            # The store and the message's vector first, on this one thread: two threads
            # importing the same modules at once can deadlock on the import lock.
            if not self.settings["cognee.url"]:
                self._store = self.store
                self.query_vector()
                self._early_passages = Early(self._search_and_score)
            return self.scored_notes(notes_deadline)

        self._early_notes = Early(notes)

    def _start_passages_beside_notes(self) -> None:
        """With the local judge and the embedded store, search and judge the passages on a
        thread beside the notes' judging: two forward passes of the cross-encoder share the
        cores instead of queueing (~120 ms in a row, ~75 ms side by side on two cores). When
        the notes answer, the passages' work is dropped unread. Only for a judge with `prepare`
        (the local one): it loads what scoring reads first, so two threads can score at once."""
        if (self._early_passages is not None or self.settings["cognee.url"]
                or self._judge_remote()):
            return
        prepare = getattr(self.judge, "prepare", None)
        if prepare is None:
            return  # a judge that does not say it can score on two threads at once
        # The store, the message's vector and the judge's weights on this thread first: two
        # threads importing the same modules at once can deadlock on the import lock.
        self._store = self.store
        self.query_vector()
        prepare(self.event.prompt)
        self._early_passages = Early(self._search_and_score)

    def _search_and_score(self) -> tuple[list, list[Item] | Exception]:
        """The passages, and their scores or the judge's error: a failed judge still leaves
        the passages for the local one."""
        from memsift.judge.base import JudgeError

        budget = min(self.settings.search_budget_s, MAX_SEARCH_S)
        passages = self._search(self.deadline.sub(budget))
        try:
            return passages, self.scored_passages(passages, self.deadline) if passages else []
        except (JudgeError, TimeoutError) as exc:
            return passages, exc

    def _notes_scored(self, deadline: Deadline) -> list[Item]:
        """The notes judged early, when they were and the judge is still the one asked."""
        early, self._early_notes = self._early_notes, None
        if early is None or self._llm_fallback:
            return self.scored_notes(deadline)
        return early.result(deadline)
