"""What the conversation already holds: an item whose distinctive words mostly appear in the
session's recent text adds nothing the agent does not already see. The cascade's conversation
filter applies this test (prompt/selection.py), and the trainers read the corpus with it, so
they count what the hook would drop (memsift.judge.corpus.Turn.held)."""

from __future__ import annotations

import re

# The agent keeps the whole session in view (until the host compacts it), so an answer given
# forty turns ago is still held. Only the conversation's text counts (no tool output), and of
# that the last characters: word overlap with a very long text says less and less.
TAIL_CHARS = 30_000
HELD_FRACTION = 0.6  # an item whose distinctive words the session already mostly holds is dropped
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9_]*[a-z0-9]|[a-z0-9]")

# Frequent words of four letters or more that say nothing about a subject.
STOPWORDS = frozenset(["about", "above", "after", "again", "against", "also", "always", "among", "another", "anything", "around", "because", "been", "before", "being", "below", "between", "both", "cannot", "could", "does", "doing", "done", "down", "during", "each", "either", "else", "even", "ever", "every", "from", "further", "have", "having", "here", "into", "itself", "just", "keep", "kept", "know", "like", "made", "make", "many", "more", "most", "much", "must", "need", "needs", "never", "next", "only", "other", "others", "over", "same", "should", "since", "some", "still", "such", "than", "that", "their", "them", "then", "there", "these", "they", "thing", "things", "this", "those", "though", "through", "until", "upon", "used", "uses", "using", "very", "want", "were", "what", "when", "where", "whether", "which", "while", "will", "with", "within", "without", "would", "your", "yours", "just", "also", "only", "once", "every", "first", "last", "back", "well"])


def distinctive_words(text: str) -> set[str]:
    """Lower-cased words of four characters or more, stopwords aside."""
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) >= 4 and w not in STOPWORDS}


def held_fraction(item_text: str, words: set[str]) -> float:
    """Share of the item's distinctive words that the conversation already holds."""
    return share_held(distinctive_words(item_text), words)


def share_held(own: set[str], words: set[str]) -> float:
    """held_fraction for an item whose distinctive words are known already (`own`)."""
    return len(own & words) / len(own) if own else 0.0
