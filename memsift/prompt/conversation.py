"""What the conversation already holds: an item whose distinctive words mostly appear in the
recent turns adds nothing the agent does not already see."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memsift.events import Turn

# The agent keeps the whole session in view (until the host compacts it), so an answer given
# forty turns ago is still held. Only the conversation's text counts (no tool output), and of
# that the last characters: word overlap with a very long text says less and less.
TAIL_CHARS = 30_000
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9_]*[a-z0-9]|[a-z0-9]")

# Frequent words of four letters or more that say nothing about a subject.
STOPWORDS = frozenset(["about", "above", "after", "again", "against", "also", "always", "among", "another", "anything", "around", "because", "been", "before", "being", "below", "between", "both", "cannot", "could", "does", "doing", "done", "down", "during", "each", "either", "else", "even", "ever", "every", "from", "further", "have", "having", "here", "into", "itself", "just", "keep", "kept", "know", "like", "made", "make", "many", "more", "most", "much", "must", "need", "needs", "never", "next", "only", "other", "others", "over", "same", "should", "since", "some", "still", "such", "than", "that", "their", "them", "then", "there", "these", "they", "thing", "things", "this", "those", "though", "through", "until", "upon", "used", "uses", "using", "very", "want", "were", "what", "when", "where", "whether", "which", "while", "will", "with", "within", "without", "would", "your", "yours", "just", "also", "only", "once", "every", "first", "last", "back", "well"])


def distinctive_words(text: str) -> set[str]:
    """Lower-cased words of four characters or more, stopwords aside."""
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) >= 4 and w not in STOPWORDS}


def recent_text(turns: Sequence[Turn], prompt: str) -> str:
    """The session's text before this message (the message itself is not 'already held'),
    its last TAIL_CHARS characters."""
    turns = list(turns)
    if turns and turns[-1].role == "user" and _same(turns[-1].text, prompt):
        turns = turns[:-1]
    text = "\n".join(t.text for t in turns)
    return text[-TAIL_CHARS:]


def recent_turns(turns: Sequence[Turn], prompt: str, n: int) -> list[Turn]:
    """The last `n` turns before this message (the transcript may end with it already)."""
    turns = list(turns)
    if turns and turns[-1].role == "user" and _same(turns[-1].text, prompt):
        turns = turns[:-1]
    return turns[-n:] if n > 0 else []


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def held_fraction(item_text: str, words: set[str]) -> float:
    """Share of the item's distinctive words that the conversation already holds."""
    own = distinctive_words(item_text)
    if not own:
        return 0.0
    return len(own & words) / len(own)


# Capitalised words that start no name: pronouns, question words, articles.
_NOT_NAMES = frozenset({
    "i", "i'm", "i've", "i'll", "i'd", "ok", "the", "a", "an", "what", "when", "where", "why",
    "how", "who", "which", "is", "are", "do", "does", "did", "can", "could", "should", "would",
    "will", "in", "on", "at", "for", "and", "but", "or", "if", "so", "it", "this", "that", "my",
    "our", "we", "you", "they", "he", "she", "his", "her", "its", "their", "there", "then",
    "also", "please", "thanks",
})
_CALENDAR = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday",
})  # capitalised, but a date names no subject
_CAPITALISED = re.compile(r"(?<![\w'])([A-Z][A-Za-z0-9]+)")


def names(text: str) -> set[str]:
    """Names the message uses: capitalised words not opening a sentence (people, products,
    places), lower-cased. Identifiers and lower-case words are left to the judge."""
    found = set()
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip()
        word = match.group(1).lower()
        if before and before[-1] not in '.!?:;"\n' and word not in _NOT_NAMES | _CALENDAR:
            found.add(word)
    return found


def mentions_any(text: str, wanted: set[str]) -> bool:
    """Whether `text` mentions one of the names (whole words, case aside)."""
    return bool(wanted & set(re.findall(r"[a-z0-9]+", text.lower())))
