"""The offline note: the sentences of an exchange that carry the choice and its reason.

Never the raw exchange. Sentences are scored by cues that mark a reason, a rule or a fix
("because", "instead of", "never", "the fix was", error names, measured numbers); the best
ones are kept in their original order up to the note's length. A short first sentence of the
reply usually states the answer itself ("Move to Postgres."), so it is kept when it fits.
"""

from __future__ import annotations

import re

CUES = {
    "because": 3, "so that": 3, "instead of": 3, "decided": 3, "the fix was": 4,
    "root cause": 4, "never": 3, "always": 2, "must": 3, "otherwise": 2, "only": 1,
    "caused": 2, "since": 1, "so ": 1, "fixed": 2, "not yet": 2, "until": 1, "first": 1,
    "then": 1, "fails": 2, "failed": 2, "don't": 2, "do not": 2, "keep ": 1, "use ": 1,
}
_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\berror\[\w+\]|SQLSTATE|\bOOM\b")
_MEASURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|MB|GB|%|seconds|minutes|rows)\b")
_FILLER = re.compile(r"^(?:sure|okay|ok|no problem|great|looked into it|good question)"
                     r"[.!]\s*", re.IGNORECASE)
_ASIDE = re.compile(r"^(?:hey|hi|ok so|so|quick question|one more thing|also|btw)[,:]?\s+",
                    re.IGNORECASE)
MAX_LEAD_CHARS = 120  # the user's question leads the note when it is this short: the subject
MIN_BODY_CHARS = 120  # but never at the cost of the reason
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|\n+")
SHORT_ANSWER_CHARS = 60  # a first sentence this short is the answer itself


def sentences(text: str) -> list[str]:
    text = _CODE_BLOCK.sub(" ", text)
    parts = [" ".join(p.split()) for p in _SENTENCE.split(text)]
    cleaned = [_FILLER.sub("", p).lstrip("-*# ").strip() for p in parts]
    return [p for p in cleaned if len(p) > 3]


def score(sentence: str) -> float:
    lowered = sentence.lower()
    value = sum(weight for cue, weight in CUES.items() if cue in lowered)
    value += 3 * len(_ERROR.findall(sentence)) + len(_MEASURE.findall(sentence))
    value += 0.5 if "`" in sentence or re.search(r"\w+\.\w{2,4}\b", sentence) else 0.0
    return value


def extractive_note(user: str, reply: str, limit: int = 300) -> str:
    """The subject (the user's short question) and the reply's best sentences; the user's
    words alone only when the reply has none."""
    lead = _lead(user)
    budget = limit - len(lead) - 3 if lead else limit
    if budget < MIN_BODY_CHARS:
        lead, budget = "", limit
    body = _best_sentences(sentences(reply), budget)
    if not body:
        return _cut(lead or " ".join(sentences(user)), limit)
    return f"{lead} — {body}" if lead else body


def _lead(user: str) -> str:
    parts = sentences(_ASIDE.sub("", user.strip()))
    if not parts or len(parts[0]) > MAX_LEAD_CHARS:
        return ""
    first = parts[0]
    return first[0].upper() + first[1:]


def _best_sentences(candidates: list[str], limit: int) -> str:
    if not candidates:
        return ""
    ranked = sorted(range(len(candidates)), key=lambda i: (-score(candidates[i]), i))
    chosen: set[int] = set()
    if len(candidates[0]) <= SHORT_ANSWER_CHARS and len(candidates) > 1:
        chosen.add(0)
    for rank, index in enumerate(ranked):
        if rank and score(candidates[index]) <= 0:
            break  # beyond the best sentence, only those that carry a reason or a rule
        trial = chosen | {index}
        if _length(candidates, trial) <= limit:
            chosen = trial
        if len(chosen) >= 3:
            break
    if not chosen:
        return _cut(candidates[ranked[0]], limit)
    return " ".join(candidates[i] for i in sorted(chosen))


def _length(candidates: list[str], chosen: set[int]) -> int:
    return sum(len(candidates[i]) for i in chosen) + len(chosen) - 1


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
