"""The prompt cascade: add the memory that answers the message, and nothing otherwise, fast.

Steps, in order, each inside its own budget and the whole inside the prompt budget; the first
step that answers or rules out the search ends it (docs/cascade.md):

  kind -> local notes -> worth a search? -> long-term search -> passages -> conversation -> render

A step that fails or runs out of time is written to the audit line and the cascade goes on with
what it has, which may be nothing. Nothing here raises into the hook.

The budgets and the policy are in policy.py, the step runner in steps.py, what is added
in selection.py, the typed decision API's early fan-out in early.py and the judge, store and
vectors in collaborators.py; this says what the steps are, in which order, and what each does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memsift.audit import Decision
from memsift.clock import Deadline
from memsift.config import MAX_SEARCH_S, remote_judge
from memsift.events import Event, HookResult
from memsift.memory.lifecycle import visible
from memsift.prompt.collaborators import Collaborators, Embedder
from memsift.prompt.conversation import may_answer, names, speakers_of
from memsift.prompt.early import EarlyWork
from memsift.prompt.policy import (
    KEEP_SCORE,
    LOCAL_PROMPT_S,
    NOTE_CANDIDATES,
    NOTES_ANSWERED_SHARE,
    NOTES_S,
    PASSAGE_CANDIDATES,
    PASSAGE_EXTRA_SHARE,
    PASSAGES_S,
    SEARCH_P_MIN,
    WORTH_MIN,
    WORTH_S,
    above,
    item_threshold,
)
from memsift.prompt.render import Item
from memsift.prompt.selection import Selection
from memsift.prompt.steps import Early, StepRunner

if TYPE_CHECKING:  # numpy loads only when a step needs vectors: a ruled message never does
    import numpy as np


@dataclass
class Plan:
    """What the cascade has so far."""

    kept: list[Item] = field(default_factory=list)
    threshold: float | None = None  # the score an item needs; the judge's own until the kind says
    stop: bool = False


def run_prompt(event: Event, settings, started: float | None = None, *, judge=None,
               store=None, embedder: Embedder | None = None,
               clock: Callable[[], float] = time.monotonic, warm: bool = False) -> HookResult:
    """The UserPromptSubmit path. Judge, store, embedding model and clock are injectable;
    `warm`: the warm server answers it (memsift.warm), which the audit line records."""
    cascade = Cascade(event, settings, judge=judge, store=store, embedder=embedder,
                      clock=clock, started=started)
    cascade.decision.warm = warm
    return cascade.run()


def prompt_budget(settings) -> float:
    """budget.prompt_s; with the local judge and no budget of the user's, far less."""
    budget = float(settings["budget.prompt_s"])
    chosen = settings.sources.get("budget.prompt_s", "default") != "default"
    if remote_judge(settings) or chosen:
        return budget
    return min(budget, LOCAL_PROMPT_S)


def recall(text: str, settings, project_root, *, judge=None, store=None,
           embedder: Embedder | None = None) -> list[Item]:
    """The memory part of the cascade alone (notes, long-term search, judging, render budget)
    for a query with no host around it: retrieval benchmarks. Nothing is audited."""
    event = Event(host="", name="UserPromptSubmit", session_id="", cwd=str(project_root),
                  prompt=text)
    cascade = Cascade(event, settings, judge=judge, store=store, embedder=embedder)
    try:
        _, shown = cascade.run_steps((cascade.notes_step, cascade.longterm_step))
    finally:
        cascade.close()
    return shown
class Cascade(EarlyWork, Collaborators, Selection, StepRunner):

    def __init__(self, event: Event, settings, *, judge=None, store=None,
                 embedder: Embedder | None = None,
                 clock: Callable[[], float] = time.monotonic, started: float | None = None):
        from memsift.paths import project_root
        from memsift.prompt.focus import focus

        # A long prompt (a pasted log) is judged on the question around the paste: the
        # audit keeps its full length, the steps see the part that says what is asked.
        self.event = replace(event, prompt=focus(event.prompt))
        self.full_prompt = event.prompt  # as the transcript holds it: its last turn may be it
        self.settings = settings
        self.clock = clock
        self.started = clock() if started is None else started
        self.root = project_root(event.cwd or ".")
        self._judge = judge
        self._store = store
        self._embedder = embedder
        self._guard = None
        self._llm_fallback = False
        self._own_judge = judge is None  # a judge the cascade made may hand over to the local one
        self._early_worth: float | None = None
        self._early_notes: Early | None = None  # the notes' judging, beside the kind question
        self._early_passages: Early | None = None  # the search and its judging, beside both
        self._vector_lock = threading.RLock()  # the early threads share one embedding
        self.deadline = Deadline(self._prompt_budget(), clock=clock, start=self.started)
        self.decision = Decision(project=str(self.root), session=event.session_id,
                                 host=event.host, prompt_chars=len(event.prompt))
        if len(self.event.prompt) < len(event.prompt):
            self._record("focus", 0.0, f"{len(self.event.prompt)} of {len(event.prompt)} "
                                       "characters judged")
        self._query_vector: np.ndarray | None = None
        self._notes = None
        self._names: set[str] | None = None
        self._given: set[str] | None = None

    # --- the run -------------------------------------------------------------------------

    def run(self) -> HookResult:
        steps = (self.kind_step, self.notes_step, self.worth_step, self.longterm_step)
        try:
            text, _ = self.run_steps(steps)
            notice = self._notice()
            self._write_audit()
        finally:
            self.close()
        return HookResult(context="\n".join(t for t in (text, notice) if t))

    def close(self) -> None:
        """Close the judges this cascade made (their connection pools); injected ones are
        the caller's."""
        if not self._own_judge:
            return
        for judge in (getattr(self, "_remote_judge", None), self._judge):
            try:
                getattr(judge, "close", lambda: None)()
            except Exception:  # noqa: BLE001, S110 - a pool that will not close dies with us
                pass

    def _notice(self) -> str:
        """One line telling the agent an outside service is down (once per session)."""
        try:
            return self.guard.notice(self.event.session_id) if self.guard else ""
        except Exception as exc:  # noqa: BLE001
            self.decision.error("health", str(exc))
            return ""

    def run_steps(self, steps) -> tuple[str, list[Item]]:
        try:
            plan = Plan()
            for step in steps:
                step(plan)
                if plan.stop:
                    break
            return self.finish(plan)
        except Exception as exc:  # noqa: BLE001 - a hook never breaks the session
            self.decision.error("cascade", f"{type(exc).__name__}: {exc}")
            return "", []

    @property
    def keep_score(self) -> float:
        """The judge's own threshold when it states one (it knows its calibration)."""
        threshold = getattr(self.judge, "threshold", KEEP_SCORE)
        return float(threshold() if callable(threshold) else threshold)

    @property
    def passage_share(self) -> float:
        """How much higher than a note a passage must score: the judge's own share when it
        chose one with its threshold, else PASSAGE_EXTRA_SHARE."""
        share = getattr(self.judge, "passage_share", None)
        share = share() if callable(share) else share
        return PASSAGE_EXTRA_SHARE if share is None else float(share)

    def kind_step(self, plan: Plan) -> None:
        if not self.event.prompt.strip():
            self._record("kind", 0.0, "empty")
            plan.stop = True
            return
        probs = self._ruled_kind()
        if probs is None:
            judge = self.judge  # resolved first: a paused LLM hands over to the local judge
            if self._judge_remote() and hasattr(judge, "kind_and_worth"):
                self._start_early()
            probs = self._timed("kind", self._kind_budget(judge), self._kind)
        if probs is None:
            plan.stop = True  # no kind, no basis to add anything
            return
        from memsift.judge.base import needs_search

        kind = max(probs, key=probs.get)
        search_p = needs_search(probs)
        self.decision.kind, self.decision.kind_p = kind, float(probs[kind])
        self.decision.search_p = float(search_p)
        if search_p < SEARCH_P_MIN:
            self._amend("kind", "no-search")
            plan.stop = True
            return
        if getattr(self.judge, "scores_read_the_kind", False):
            plan.threshold = self.keep_score  # the kind is already an input of its scores
        else:
            plan.threshold = item_threshold(self.keep_score, search_p)

    def _ruled_kind(self) -> dict[str, float] | None:
        """The kind of a message the local judge decides by rule ("thanks", "commit this"),
        without loading the judge: the answer LocalJudge.kind gives, at no model or numpy
        import. None when another judge decides or no rule applies."""
        if self._judge is not None or remote_judge(self.settings):
            return None
        from memsift.judge.rules import rule_kind, sure

        begin = self.clock()
        kind = rule_kind(self.event.prompt)
        if kind is None:
            return None
        self._record("kind", self._ms(begin), kind)
        return sure(kind)

    def _threshold(self, plan: Plan) -> float:
        return self.keep_score if plan.threshold is None else plan.threshold

    def notes_step(self, plan: Plan) -> None:
        threshold = self._threshold(plan)
        try:
            self._start_passages_beside_notes()
        except Exception as exc:  # noqa: BLE001 - the longterm step then searches itself
            self.decision.error("longterm", f"{type(exc).__name__}: {exc}")
        items = self._timed("notes", NOTES_S, lambda d: self._judge_notes(d, threshold))
        if items is None:
            return
        # A note this session was already given answers nothing new: it must not stop the
        # search for one that does (the conversation filter would drop it anyway).
        given = self._already_added()
        fresh = [i for i in items if i.id not in given]
        if len(fresh) < len(items):
            self._amend("notes", f"{len(fresh)} kept of {len(items)} answering, "
                                 f"{len(items) - len(fresh)} given before")
        plan.kept.extend(fresh)

    def worth_step(self, plan: Plan) -> None:
        best = max((i.score for i in plan.kept), default=0.0)
        if plan.kept and best >= above(self.keep_score, NOTES_ANSWERED_SHARE):
            self._record("worth", 0.0, "skipped: notes answered")
            plan.stop = True
            return
        if not getattr(self.judge, "worth_gates_search", True):
            self._record("worth", 0.0, "skipped: the judge reads the message in context")
            return
        if self._early_worth is not None and not self._llm_fallback:
            worth = self._early_worth
            self._record("worth", 0.0, "asked with the kind")
        else:
            worth = self._timed("worth", WORTH_S,
                                lambda d: self.judge.worth_keeping(self.event.prompt, d))
        if worth is None:
            return  # unknown: let the search and the per-passage judge decide
        self._amend("worth", "yes" if worth >= WORTH_MIN else "no")
        if worth < WORTH_MIN:
            plan.stop = True

    def longterm_step(self, plan: Plan) -> None:
        budget = min(self.settings.search_budget_s, MAX_SEARCH_S)
        early, self._early_passages = self._early_passages, None
        if early is not None:
            searched = self._timed("longterm", budget, lambda d: early.result(d)[0],
                                   retry=False)
            passages = searched
        else:
            passages = self._timed("longterm", budget, self._search)
        if not passages:
            return
        threshold = above(self._threshold(plan), self.passage_share)
        items = self._timed("passages", PASSAGES_S,
                            lambda d: self._judge_passages(passages, d, threshold, early))
        if items:
            plan.kept.extend(self._not_restating(items, plan.kept))

    # --- the steps' work -----------------------------------------------------------------

    def _judge_notes(self, deadline: Deadline, threshold: float) -> list[Item]:
        scored = self._notes_scored(deadline)
        speakers = speakers_of(i.text for i in scored)
        kept = [i for i in scored if i.score >= threshold and self.may_answer(i, speakers)]
        self._pending = f"{len(kept)} kept of {len(scored)}" if scored else "no notes"
        self.decision.judged_items("notes", scored, threshold)
        return kept

    def may_answer(self, item: Item, speakers: set[str]) -> bool:
        """The checks a kept item passes besides its score (conversation.may_answer): it is
        about what the message names, and no chat line that is the other person's news or
        that only asks. `speakers`: of the chat lines judged with it."""
        if self._names is None:
            self._names = names(self.event.prompt)
        return may_answer(item.text, self._names, speakers)

    def scored_notes(self, deadline: Deadline) -> list[Item]:
        """The notes nearest the message (by cached vectors and the rare words they share
        with it, memsift.model.lexical), each scored by the judge."""
        import numpy as np

        from memsift.model.lexical import rerank
        from memsift.model.vectors import VectorCache, text_hash

        every, hashes = self.all_notes()
        notes = visible(every)  # superseded notes leave the prompt path
        if not notes:
            return []
        known = {id(n): h for n, h in zip(every, hashes)}
        embed_fn, model_id = self.embedder
        cache = VectorCache(self.notes_path.parent, "notes", embed_fn, model_id)
        texts = [n.text for n in notes]
        matrix, present = cache.vectors(texts, deadline,
                                        [known.get(id(n)) or text_hash(n.text) for n in notes])
        cosines = np.where(present, matrix @ self.query_vector(), -1.0)
        nearest = rerank(self.event.prompt, texts, cosines, NOTE_CANDIDATES, present)
        scores = self._score([notes[i].text for i in nearest], matrix[nearest], deadline)
        return [Item(notes[i].key, "notes", notes[i].text, s, notes[i].written)
                for i, s in zip(nearest, scores)]

    @property
    def notes_path(self) -> Path:
        from memsift.memory.notes import notes_path

        return notes_path(self.settings, self.root)

    def all_notes(self):
        """Every note of the project and its text hash, read once per prompt (and parsed once
        per change of the file)."""
        if self._notes is None:
            from memsift.memory.notes_cache import read_notes

            self._notes = read_notes(self.notes_path)
        return self._notes

    def _search(self, deadline: Deadline):
        """The store's search; the embedded store takes the message's vector directly, so the
        message is embedded once per prompt."""
        store = self.store
        by_vector = getattr(store, "search_vector", None)
        if by_vector is not None and getattr(store, "model_id", None) == self.embedder[1]:
            return by_vector(self.query_vector(), PASSAGE_CANDIDATES, deadline,
                             text=self.event.prompt)
        return store.search(self.event.prompt, PASSAGE_CANDIDATES, deadline)

    def _judge_passages(self, passages, deadline: Deadline, threshold: float,
                        early: Early | None = None) -> list[Item]:
        """The passages judged early when they were by the judge still asked, else now."""
        if early is not None and not self._llm_fallback:
            scored = early.result(deadline)[1]
            if isinstance(scored, Exception):
                raise scored
        else:
            scored = self.scored_passages(passages, deadline)
        speakers = speakers_of(i.text for i in scored)
        kept = [i for i in scored if i.score >= threshold and self.may_answer(i, speakers)]
        self._pending = f"{len(kept)} kept of {len(scored)}"
        self.decision.judged_items("longterm", scored, threshold)
        return kept

    def scored_passages(self, passages, deadline: Deadline) -> list[Item]:
        """Each passage the search returned, scored alone by the judge."""
        import numpy as np

        vectors = [p.meta.get("vector") for p in passages]
        matrix = np.vstack(vectors) if vectors and all(v is not None for v in vectors) else None
        scores = self._score([p.text for p in passages], matrix, deadline)
        return [Item(p.id, "longterm", p.text, s, p.written) for p, s in zip(passages, scores)]

    def _score(self, texts: Sequence[str], vectors, deadline: Deadline) -> list[float]:
        """The judge's per-item scores, from cached vectors when the judge can use them."""
        if not texts:
            return []
        with_vectors = getattr(self.judge, "score_vectors", None)
        if with_vectors is not None and vectors is not None and self._judge_shares_model():
            return list(with_vectors(self.query_vector(), vectors, self.event.prompt, texts))
        return list(self.judge.score(self.event.prompt, texts, deadline))

    def _prompt_budget(self) -> float:
        return prompt_budget(self.settings)
