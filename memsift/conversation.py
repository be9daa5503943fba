"""What the conversation already holds: an item whose distinctive words mostly appear in the
recent turns adds nothing the agent does not already see."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memsift.events import Turn

RECENT_TURNS = 12  # about six exchanges: what the agent still has in view
TAIL_CHARS = 60_000  # of those turns, the last characters only: long pastes say little
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9_]*[a-z0-9]|[a-z0-9]")

# Frequent words of four letters or more that say nothing about a subject.
STOPWORDS = frozenset(["about", "above", "after", "again", "against", "also", "always", "among", "another", "anything", "around", "because", "been", "before", "being", "below", "between", "both", "cannot", "could", "does", "doing", "done", "down", "during", "each", "either", "else", "even", "ever", "every", "from", "further", "have", "having", "here", "into", "itself", "just", "keep", "kept", "know", "like", "made", "make", "many", "more", "most", "much", "must", "need", "needs", "never", "next", "only", "other", "others", "over", "same", "should", "since", "some", "still", "such", "than", "that", "their", "them", "then", "there", "these", "they", "thing", "things", "this", "those", "though", "through", "until", "upon", "used", "uses", "using", "very", "want", "were", "what", "when", "where", "whether", "which", "while", "will", "with", "within", "without", "would", "your", "yours", "just", "also", "only", "once", "every", "first", "last", "back", "well"])


def distinctive_words(text: str) -> set[str]:
    """Lower-cased words of four characters or more, stopwords aside."""
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) >= 4 and w not in STOPWORDS}


def recent_text(turns: Sequence[Turn], prompt: str) -> str:
    """The last turns before this message (the message itself is not 'already held')."""
    turns = list(turns)
    if turns and turns[-1].role == "user" and _same(turns[-1].text, prompt):
        turns = turns[:-1]
    text = "\n".join(t.text for t in turns[-RECENT_TURNS:])
    return text[-TAIL_CHARS:]


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def held_fraction(item_text: str, words: set[str]) -> float:
    """Share of the item's distinctive words that the conversation already holds."""
    own = distinctive_words(item_text)
    if not own:
        return 0.0
    return len(own & words) / len(own)
