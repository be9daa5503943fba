"""The offline note: the fact an exchange established, in one line, without the question.

Composed from the sentences that carry it: the reply's sentences that state the choice and
its reason, the constraint, the cause and the fix, the procedure (cue words, error names,
names of files and services, measured numbers), with the filler around them dropped ("Nothing
decided.", "Done:", "I'd say no:"). The question is never copied; the user's own words lead the
note only when they state a constraint or a reason ("humans read only on the prd state",
"never past the stable from six months ago"). A short instruction ("fix it") borrows the
sentence of the reply before it that named the cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memsift.model.lexical import content_words

CUES = {
    "because": 3, "so that": 3, "instead of": 3, "decided": 3, "the fix was": 4,
    "root cause": 4, "never": 3, "always": 2, "must": 3, "otherwise": 2, "only": 1,
    "caused": 2, "came from": 2, "since": 1, "so ": 1, "fixed": 2, "not yet": 2, "until": 1,
    "first": 1, "then": 1, "fails": 2, "failed": 2, "don't": 2, "do not": 2, "keep ": 1,
    "use ": 1, "now ": 1, "rule": 2, "from now on": 3, "per ": 1, "limit": 1, "can't": 2,
}
_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\berror\[\w+\]|SQLSTATE|\bOOM\b|\b[A-Z]+\d{3,}\b")
_MEASURE = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:ms|s|MB|GB|%|seconds|minutes|rows|/min|€|\$)?")
_NAME = re.compile(r"`[^`]+`|\b[\w-]+\.\w{2,4}\b|\b\w+_\w+\b|\b[A-Z][a-z]+[A-Z]\w*\b|"
                   r"\b[a-z]+-[a-z]+\b|/\w[\w/.-]*")
_FILLER_SENTENCE = re.compile(
    r"(?i)^(?:(?:there'?s )?nothing (?:is |was |has been )?(?:decided|recorded|on record|"
    r"in (?:memory|the notes)|i (?:have|know|can find))\b.*|"
    r"(?:it'?s |that'?s )?not (?:decided|recorded)\b.*|no (?:note|decision|record)\b.*|"
    r"i (?:don'?t|do not) have (?:anything|a note|a record|any record)\b.*|"
    r"i (?:can'?t|cannot|couldn'?t) find (?:a |any )?(?:recorded|record|note|reason)\b.*|"
    r"(?:sure|okay|ok|done|yes|no|yep|nope|good (?:catch|question|call)|looked into it|"
    r"agreed|right|makes sense|correct|glad it helped|de rien|you'?re welcome)[.!]?)$")
_CONSTRAINT = re.compile(r"(?i)\b(?:only|never|always|must|don'?t|do not|no longer|not|no|"
                         r"instead|rather|from now on|every|each|without|unless|until|"
                         r"because|so that|want|rule|keep|stay)\b")
_LEAD = re.compile(
    r"(?i)^(?:(?:yes|no|yep|nope|sure|ok(?:ay)?|right|agreed|correct|done|good (?:catch|call)|"
    r"nothing (?:decided|on record)(?: yet)?|not decided)[,.:;!]\s*|"
    r"i'?d say (?:yes|no)[,.:;]?\s*|i (?:wouldn'?t|would not)[,.:;]\s*|"
    r"(?:that was it|that'?s it|found it|there it is)[,.:;!]\s*|"
    r"(?:i'?d|i would|i'?ll|we'?d|let'?s|my suggestion:?|i suggest)\s+(?=[a-z]))")
_USER_ASIDE = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|so|hey|hi|alright|right|good|great|fine|cool|beleza|d'accord|"
    r"parfait|bon|ja|genau|perfect|yes|yeah|ah|hmm|then|and|also|btw)[,.!:]?\s+)+|"
    r"^(?:please\s+)?(?:do it|do that|fix it|fix that|try it|try that|go ahead|ship it|"
    r"like that|sounds good)[,.:!]?\s*")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`\"'(\[])|\n+")
SHORT_INSTRUCTION_WORDS = 3  # "fix it", "do that": the subject is in the reply before
MIN_STATEMENT_WORDS = 4  # a user message with this many content words can state a constraint
MAX_SENTENCES = 3
SHORT_ANSWER_CHARS = 60  # a first sentence this short states the choice itself


_AFTER_FILLER = re.compile(r",\s*but\s+|;\s+|:\s+|\s+(?:—|--)\s+")
MIN_REST_WORDS = 3  # what follows "Nothing recorded, but" must carry this much to be the fact


def sentences(text: str) -> list[str]:
    text = _CODE_BLOCK.sub(" ", text)
    parts = [" ".join(p.split()).lstrip("-*# ").strip() for p in _SENTENCE.split(text)]
    return [p for p in (_without_filler(p) for p in parts if len(p) > 3) if p]


def _without_filler(sentence: str) -> str:
    """The sentence, or what it says after a filler opening ("Nothing recorded, but it can
    resume: ..." is the fact itself); "" when it is filler through and through."""
    if not _FILLER_SENTENCE.match(sentence):
        return sentence
    cut = _AFTER_FILLER.search(sentence)
    rest = sentence[cut.end():].strip() if cut else ""
    if len(content_words(rest)) < MIN_REST_WORDS:
        return ""
    return rest[:1].upper() + rest[1:]


_JOINED = re.compile(r"(?i)^(?:and|also|plus)\s+(?:also\s+)?(?=\w)")  # "Done, and the test..."


def _clean(sentence: str) -> str:
    for _ in range(2):
        cleaned = _LEAD.sub("", sentence).strip()
        if cleaned != sentence:  # what the dropped opening joined on stands alone
            cleaned = _JOINED.sub("", cleaned)
        sentence = cleaned
    return sentence[:1].upper() + sentence[1:] if sentence else ""


def score(sentence: str) -> float:
    lowered = sentence.lower()
    value = sum(weight for cue, weight in CUES.items() if cue in lowered)
    value += 3 * len(_ERROR.findall(sentence)) + 0.5 * len(_MEASURE.findall(sentence))
    return value + len(_NAME.findall(sentence))


def is_question(text: str) -> bool:
    text = text.strip()
    return text.endswith("?") or bool(re.match(
        r"(?i)(?:what|why|how|which|who|where|when|should|can|could|do|does|did|is|are|was|"
        r"will|would)\b", text))


def _statement(user: str) -> str:
    """The user's message when it states something (not a question, not an aside)."""
    stated = [s for s in sentences(user) if not is_question(s)]
    text = _USER_ASIDE.sub("", " ".join(stated)).strip(" ,:;-")
    if not text or len(content_words(text)) < MIN_STATEMENT_WORDS:
        return ""
    if not _CONSTRAINT.search(text):
        return ""  # an instruction the reply carries out: the reply says what was done
    return text[:1].upper() + text[1:]


def compose_fact(user: str, reply: str, before: Sequence[tuple[str, str]] = (),
                 limit: int = 300) -> str:
    """The note for an exchange worth keeping: the fact, in one line of at most `limit`."""
    body = [_clean(s) for s in sentences(reply)]
    body = [s for s in body if len(s) > 3]
    lead = _statement(user)
    if (not lead and before and not is_question(user)
            and len(content_words(user)) <= SHORT_INSTRUCTION_WORDS):
        lead = _cause(before[-1][1])
    if lead and body and _covered(lead, body):
        lead = ""
    chosen = _best(body, MAX_SENTENCES, limit - (len(lead) + 2 if lead else 0))
    text = "; ".join(filter(None, [lead.rstrip(".;"), " ".join(chosen)]))
    return _cut(text or " ".join(sentences(user)), limit).strip(" ;")


_UNKNOWN = re.compile(r"(?i)\b(?:nothing (?:is |was )?recorded|not recorded|no record|"
                      r"(?:can'?t|cannot|couldn'?t) find|(?:don'?t|do not) have|your call|"
                      r"product call|up to you)\b")


def _cause(reply: str) -> str:
    """The sentence of the reply before that a short "fix it" or "yes, that one" acts on: the
    one that carries the most, never one that says nothing is known."""
    candidates = [s for s in sentences(reply) if not _UNKNOWN.search(s)]
    if not candidates:
        return ""
    best = max(candidates, key=score)
    return _clean(best) if score(best) > 0 else ""


def _covered(lead: str, body: Sequence[str]) -> bool:
    """The reply already says what the user's words say."""
    words = content_words(lead)
    return bool(words) and len(words & content_words(" ".join(body))) >= 0.8 * len(words)


def _best(candidates: Sequence[str], most: int, limit: int = 300) -> list[str]:
    """The highest-scoring sentences that fit in `limit`, in their original order; the first
    one always, cut if it must be, when nothing else fits."""
    if not candidates:
        return []
    ranked = sorted(range(len(candidates)), key=lambda i: (-score(candidates[i]), i))
    chosen: list[int] = []
    if len(candidates[0]) <= SHORT_ANSWER_CHARS and len(candidates) > 1:
        chosen.append(0)  # "Move to Postgres.": a short first sentence is the answer itself
    for rank, index in enumerate(ranked):
        if index in chosen:
            continue
        if rank and score(candidates[index]) <= 0:
            break  # beyond the best sentence, only those that carry something
        if sum(len(candidates[i]) + 1 for i in chosen) + len(candidates[index]) <= limit:
            chosen.append(index)
        if len(chosen) >= most:
            break
    if not chosen:
        return [_cut(candidates[ranked[0]], limit)]
    return [candidates[i] for i in sorted(chosen)]


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def extractive_note(user: str, reply: str, limit: int = 300) -> str:
    """compose_fact without the turns before (kept for callers that have only the pair)."""
    return compose_fact(user, reply, (), limit)
