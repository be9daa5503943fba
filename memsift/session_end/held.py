"""What the project already holds, as the session end judges an exchange against it.

The visible notes and the long-term passages, with their MiniLM vectors and content words
(memsift.judge.keep.Held). An exchange that repeats one of them is not a new note: it
reinforces the note it restates (a USED verdict queued in the lifecycle state, applied by
consolidation), or, when it changes it (a correction or a retraction), its note supersedes
that one. Notes written during the pass join what is held, so a session that says the same
thing twice keeps it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memsift.clock import Deadline
from memsift.judge import keep
from memsift.log import log
from memsift.memory.notes import Note
from memsift.model.lexical import content_words

NOTES = "notes"
LONGTERM = "longterm"
LONGTERM_BUDGET_S = 30.0  # background work, but a hung store must not hold the session end
LONGTERM_TOP_K = 5  # passages asked per exchange of a store that cannot list them all


@dataclass(frozen=True)
class HeldItem:
    key: str
    text: str
    source: str  # NOTES | LONGTERM
    note: Note | None = None


@dataclass
class ProjectMemory:
    """The held items and their vectors; `add` puts a note written now among them."""

    items: list[HeldItem] = field(default_factory=list)
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, keep.DIM), np.float32))

    @property
    def held(self) -> keep.Held:
        return keep.Held.of([i.text for i in self.items], self.vectors)

    def add(self, item: HeldItem, vector: np.ndarray) -> None:
        self.items.append(item)
        self.vectors = np.vstack([self.vectors, np.asarray(vector, np.float32)[None, :]])

    def restated(self, head: keep.Head, user_vec: np.ndarray, reply_vec: np.ndarray,
                 words: set[str]) -> HeldItem | None:
        """The item the exchange repeats, if the restatement head is sure of one."""
        if not self.items:
            return None
        pairs = keep.restate_pairs(user_vec, reply_vec, words, self.held)
        scores = head.restate_probability(pairs)
        best = int(np.argmax(scores))
        return self.items[best] if scores[best] >= head.restate_threshold else None


def words_of(user: str, reply: str) -> set[str]:
    return content_words(user + " " + reply)


def load_memory(settings, root, notes: Sequence[Note], queries: Sequence[str], embed_fn
                ) -> ProjectMemory:
    """The visible notes (their vectors from the prompt path's cache) and the long-term
    passages; a store that cannot be read leaves the notes alone held (logged)."""
    from memsift.memory.lifecycle import visible
    from memsift.memory.notes import notes_path
    from memsift.model.vectors import VectorCache

    live = visible(notes)
    items = [HeldItem(n.key, n.text, NOTES, n) for n in live]
    vectors = [np.zeros((0, keep.DIM), np.float32)]
    if live:
        cache = VectorCache(notes_path(settings, root).parent, "notes")
        matrix, _ = cache.vectors([n.text for n in live])
        vectors.append(matrix)
    passages, passage_vectors = _longterm(settings, root, queries, embed_fn)
    items += passages
    vectors.append(passage_vectors)
    return ProjectMemory(items, np.concatenate(vectors).astype(np.float32))


def _longterm(settings, root, queries: Sequence[str], embed_fn
              ) -> tuple[list[HeldItem], np.ndarray]:
    from memsift.longterm import LongTermError, get_store

    empty = np.zeros((0, keep.DIM), np.float32)
    store = None
    try:
        store = get_store(settings, root)
        passages = _passages_of(store, queries)
    except (LongTermError, OSError) as exc:
        log("warning", "long-term store not read at session end; notes alone are held",
            error=str(exc))
        return [], empty
    finally:
        if store is not None and hasattr(store, "close"):
            store.close()
    if not passages:
        return [], empty
    items = [HeldItem(p.id, p.text, LONGTERM) for p in passages]
    vectors = [p.meta.get("vector") for p in passages]
    if any(v is None or len(v) != keep.DIM for v in vectors):
        return items, np.asarray(embed_fn([p.text for p in passages]), np.float32)
    return items, np.stack(vectors).astype(np.float32)


def _passages_of(store, queries: Sequence[str]) -> list:
    """Every passage of the embedded store; from a server, those nearest each exchange."""
    if hasattr(store, "passages") and hasattr(store, "vectors"):
        passages = store.passages()
        if not passages:
            return []
        matrix, present = store.vectors.vectors([p.text for p in passages])
        from memsift.longterm.base import Passage

        return [Passage(p.id, p.text, p.written, p.source, 0.0,
                        {"vector": matrix[i]} if present[i] else {})
                for i, p in enumerate(passages)]
    deadline = Deadline(LONGTERM_BUDGET_S)
    found: dict[str, object] = {}
    for query in queries:
        if deadline.expired():
            break
        for passage in store.search(query, LONGTERM_TOP_K, deadline):
            found.setdefault(passage.id, passage)
    return list(found.values())


def reinforce(settings, root, keys_when: Sequence[tuple[str, str, str]]) -> int:
    """Queue a USED verdict for each (note key, source, time): consolidation applies them.
    Idempotent by source, so a rerun of the pass reinforces nothing twice."""
    if not keys_when:
        return 0
    from memsift.memory import consolidate
    from memsift.memory.lifecycle import USED

    events = [{"key": f"restated|{source}|{key}", "note": key, "verdict": USED, "when": when}
              for key, source, when in keys_when]
    return consolidate.queue_usage(root, settings, events)
