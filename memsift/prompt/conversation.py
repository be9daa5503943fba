"""The conversation as the cascade reads it: the session's recent text (what it already holds:
memsift/held.py tests an item against it), the last turns, the names a message uses, and whose
news a stored chat line is (may_answer)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memsift.events import Turn
from memsift.held import TAIL_CHARS


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


def may_answer(text: str, wanted: set[str], speakers: set[str]) -> bool:
    """Whether an item may answer a message that uses the names `wanted`, whatever its score.
    An item that mentions none of them is about something else, however close its wording:
    "what is Nate playing?" is not answered by what Caroline played. Nor is a question about
    one person of a chat answered by the other's line about themselves (`speakers`: of the
    chat lines judged with it), nor by a chat line that only asks."""
    if wanted and (not mentions_any(text, wanted)
                   or about_another_speaker(text, wanted, speakers)):
        return False
    return not only_asks(text)


# A chat line as stored: "4:12 pm on 9 March, 2025, Noor: ...". The date is required: a note
# such as "Postgres: chosen for multi-row transactions." is no one's chat line.
_SPEAKER = re.compile(r"^[^\n]{0,60}?\d{4},\s*([A-Z][\w'\-]{1,30}):\s")
# Words that address the other person: a line holding one speaks of them, not only of its
# speaker.
_ADDRESS = re.compile(r"\b(?:you|your|yours|yourself|you're|youre|you've|you'll|you'd|ya|u|ur"
                      r"|y'all|congrats|congratulations)\b", re.IGNORECASE)
# What may come before a name said to the other person ("Thanks, Melanie!", "Hey Mel").
_GREETING = re.compile(r"\b(?:hey|hi|hello|heya|thanks|thank you|thx|yeah|yes|yep|wow|woohoo|"
                       r"whoa|oh|ooh|aw+|ok|okay|sorry|dear|morning|night|haha|lol|omg|yay|ah)$",
                       re.IGNORECASE)
SHORT_SENTENCE_WORDS = 4  # "The kids look so cute, Mel!" is more than a greeting
_CAPTION = re.compile(r"\[shares [^\]]*\]")  # a photo's caption, as LoCoMo stores it
_TRAILING_SYMBOLS = re.compile(r"[^\w?!.,'\s]+$")  # emoji after the last sentence


def speaker(text: str) -> set[str]:
    """The speaker of a stored chat line, as the words mentions_any compares (empty when the
    text is not a chat line)."""
    match = _SPEAKER.match(text)
    return _name_words(match) if match else set()


def speakers_of(texts: Iterable[str]) -> set[str]:
    """The speakers of the chat lines among texts judged together."""
    return set().union(*(speaker(t) for t in texts))


def _name_words(match: re.Match) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", match.group(1).lower()))


def about_another_speaker(text: str, wanted: set[str], speakers: set[str]) -> bool:
    """Whether a chat line is its speaker's own news while the message asks about the other
    person of the chat: the message names a speaker (`speakers`: of the lines judged with this
    one), this line's speaker is not named, and the line neither addresses the other person
    ("you", "congrats") nor names them except to greet them ("Thanks, Melanie! my grandma's
    necklace..." says nothing of Melanie's grandma)."""
    match = _SPEAKER.match(text)
    if not match or not wanted & speakers or wanted & _name_words(match):
        return False
    body = text[match.end():]
    if _ADDRESS.search(body):
        return False
    for word in re.finditer(r"[A-Za-z0-9]+", body):
        if word.group(0).lower() in wanted and not _greeted(body, word.start(), word.end()):
            return False
    return True


def only_asks(text: str) -> bool:
    """Whether a chat line only asks ("Wow, Mel! How did they handle the accident?"): it ends
    on a question and its other sentences are questions too or a few words of greeting. Such
    a line asks what a later one may answer; it answers nothing."""
    match = _SPEAKER.match(text)
    if not match:
        return False
    body = _CAPTION.sub("", text[match.end():]).strip()
    body = _TRAILING_SYMBOLS.sub("", body).strip()
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", body) if s.strip()]
    return bool(sentences) and sentences[-1].endswith("?") and all(
        s.endswith("?") or len(s.split()) <= SHORT_SENTENCE_WORDS for s in sentences)


def _greeted(body: str, start: int, end: int) -> bool:
    """Whether the name at body[start:end] is said to someone ("Thanks, Melanie!"), not of them."""
    before = body[:start].rstrip()
    after = body[end:end + 1]
    leads = not before or before.endswith((",", "!", ".", "?")) or _GREETING.search(before)
    return bool(leads) and (not after or after in "!,.?")
