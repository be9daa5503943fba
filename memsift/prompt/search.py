"""Asking a project's memory as the prompt path would, from a terminal: every candidate from
both memories with the judge's score (the `search` command)."""

from __future__ import annotations

from memsift.clock import Deadline
from memsift.config import MAX_SEARCH_S
from memsift.events import Event
from memsift.prompt.render import Item

SEARCH_COMMAND_S = 30.0  # a person waits at a terminal: generous, but never forever


def search(text: str, settings, project_root, *, judge=None, store=None,
           ) -> list[tuple[Item, bool]]:
    """Every candidate from both memories with its score and whether the cascade's policy
    would keep it (kinds and the worth question aside: this asks the memory directly)."""
    from memsift.prompt.cascade import Cascade
    from memsift.prompt.policy import KEEP_SCORE, PASSAGE_CANDIDATES

    event = Event(host="claude-code", name="UserPromptSubmit", session_id="search",
                  cwd=str(project_root), prompt=text)
    cascade = Cascade(event, settings, judge=judge, store=store)
    deadline = Deadline(SEARCH_COMMAND_S)
    items = cascade.scored_notes(deadline)
    search_deadline = deadline.sub(min(settings.search_budget_s, MAX_SEARCH_S))
    passages = cascade.store.search(text, PASSAGE_CANDIDATES, search_deadline)
    items += cascade.scored_passages(passages, deadline)
    items.sort(key=lambda i: -i.score)
    return [(item, item.score >= KEEP_SCORE) for item in items]
