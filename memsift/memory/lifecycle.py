"""Memory that lives: acts and salience, fading, supersession, reinforcement, rules.

Pure functions only (no files, no clock of their own): the cascade, the session-end worker and
`memsift consolidate` (memsift.memory.consolidate) call them with the notes, the time and the state
they have read. docs/lifecycle.md tells the whole story.

- Every note has an act (what kind of utterance made it) and a salience in 0..1: the higher of
  a floor set by the act and who said it, and the intensity of how it was said, judged against
  that user's usual tone.
- Retrievability follows the FSRS power forgetting curve R(t, S) = (1 + F*t/S)^D, with the
  stability S (days until R falls to 0.9) seeded by salience and moved by reinforcement.
  Retrievability orders and breaks ties; nothing is ever deleted for fading.
- A later correction or retraction on the same subject supersedes the older note: the old one
  stays in the file with superseded_by=<id> and leaves the prompt path.
- Rules (team rules, hard constraints) are added whenever their subject comes up, within
  their own share of the character budget.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from memsift.clock import parse_time
from memsift.memory.notes import Note

T = TypeVar("T")

# --- acts -----------------------------------------------------------------------------------

CORRECTION = "correction"
RETRACTION = "retraction"
DECISION = "decision"
COMMITMENT = "commitment"
OBSERVATION = "observation"
ROUTINE = "routine"
ACTS = (CORRECTION, RETRACTION, DECISION, COMMITMENT, OBSERVATION, ROUTINE)

USER = "user"
AGENT = "agent"

# Salience floors by act and speaker. A user's correction is the strongest signal there is (the
# memory was wrong and a person took the trouble to say so); the agent taking something back
# is weaker (it often hedges); a routine lookup is the weakest. Every user floor is above the
# same act's agent floor: the person owns the project, the agent only works in it.
ACT_FLOOR: Mapping[tuple[str, str], float] = {
    (CORRECTION, USER): 0.9,
    (RETRACTION, USER): 0.8,
    (DECISION, USER): 0.75,
    (COMMITMENT, USER): 0.6,
    (OBSERVATION, USER): 0.4,
    (ROUTINE, USER): 0.1,
    (CORRECTION, AGENT): 0.6,
    (RETRACTION, AGENT): 0.55,
    (DECISION, AGENT): 0.5,
    (COMMITMENT, AGENT): 0.45,
    (OBSERVATION, AGENT): 0.3,
    (ROUTINE, AGENT): 0.05,
}
RULE_FLOOR = 0.95  # a team rule is meant to hold for good: it starts near the top

_I = re.IGNORECASE
_RETRACTION_CUES = re.compile(
    r"\b(scratch that|never ?mind|forget (that|it|what i said)|ignore (that|my last|what i)"
    r"|i take (that|it) back|i was wrong|my mistake|we('re| are) not (going to|doing)"
    r"|(cancel|drop|revert) (that|the|this)|no longer (need|needed|doing|planned)"
    r"|disregard)\b", _I)
_CORRECTION_CUES = re.compile(
    r"(^\s*(no|nope|wrong)\b[,.!:]|\bactually\b|\bthat('s| is) (wrong|incorrect|outdated|not right)"
    r"|\bno longer\b|\bnot \w+( \w+)? any ?more\b|\banymore\b|\bmoved (from|to)\b|\bhas moved\b"
    r"|\binstead of\b|\b(changed|switched|swapped|migrated) (from|to|over)\b|\breplaced (by|with)\b"
    r"|\b(swapped|replaced) [\w.\-/]+( [\w.\-/]+)? (for|with|by)\b"
    r"|\bis now\b|\bare now\b|\bnow (lives|runs|uses|points|is)\b|\bcorrection\b|\boutdated\b"
    r"|\bdeprecated\b)", _I)
_DECISION_CUES = re.compile(
    r"\b(we('ll| will)? go with|let'?s (use|go with|keep|pick|stick)|decided|we chose|we picked"
    r"|settled on|going with|the plan is|we('ll| will) use|agreed (on|to)|our choice)\b", _I)
_COMMITMENT_CUES = re.compile(
    r"\b(i('ll| will)|we('ll| will)|promise|remind me|follow up|todo|to-do|by (monday|tuesday"
    r"|wednesday|thursday|friday|tomorrow|eod|end of (day|week)))\b", _I)
_ROUTINE_CUES = re.compile(
    r"^\s*(what|where|how|which|who|when|show|list|run|open|print|check|can you|could you"
    r"|please|ok|okay|thanks|thank you|yes|sure|lgtm)\b", _I)


def classify_act(text: str, speaker: str = USER) -> str:
    """The act of one utterance, by cues (first match in order of strength). An agent's
    'actually' about its own earlier answer is a retraction more often than a correction,
    but the floor table already ranks it below the user's; the act itself stays the cue's."""
    if _RETRACTION_CUES.search(text):
        return RETRACTION
    if _CORRECTION_CUES.search(text):
        return CORRECTION
    if _DECISION_CUES.search(text):
        return DECISION
    if _ROUTINE_CUES.search(text) or text.rstrip().endswith("?"):
        return ROUTINE
    if _COMMITMENT_CUES.search(text):
        return COMMITMENT
    return OBSERVATION


def act_floor(act: str, speaker: str = USER) -> float:
    who = USER if speaker == USER else AGENT
    return ACT_FLOOR.get((act, who), ACT_FLOOR[(OBSERVATION, who)])


# --- intensity against the user's own tone ---------------------------------------------------

_CAPS_WORD = re.compile(r"\b[A-Z]{2,}\b")
_ABSOLUTES = re.compile(
    r"\b(never|always|must|critical|important|under no circumstances|do not|don'?t ever)\b", _I)
# Weights of the emphasis signals: a shouted word and "!!" say more than one "!".
CAPS_WEIGHT = 1.0
EXCLAIM_WEIGHT = 0.5
DOUBLE_EXCLAIM_WEIGHT = 1.0
ABSOLUTE_WEIGHT = 0.5
EMPHASIS_CAP = 6.0  # one message cannot be more than this emphatic; keeps one rant from a baseline
MIN_BASELINE_MESSAGES = 3  # fewer other messages than this say nothing about a person's tone
DEFAULT_BASELINE = (0.3, 0.5)  # (mean, spread) of a typical writer when we know too little
MIN_SPREAD = 0.5  # a terse user's spread is ~0: one "!" must not look like a scream
SPIKE_FULL = 3.0  # this many spreads above the usual tone is full intensity (1.0)


def emphasis(text: str) -> float:
    """Raw emphasis of one message: shouted words, exclamations, absolute words."""
    caps = len(_CAPS_WORD.findall(text))
    doubles = len(re.findall(r"!{2,}", text))
    singles = text.count("!") - sum(len(m) for m in re.findall(r"!{2,}", text))
    absolutes = len(_ABSOLUTES.findall(text))
    score = (CAPS_WEIGHT * caps + EXCLAIM_WEIGHT * singles + DOUBLE_EXCLAIM_WEIGHT * doubles
             + ABSOLUTE_WEIGHT * absolutes)
    return min(score, EMPHASIS_CAP)


@dataclass(frozen=True)
class Baseline:
    """A user's usual emphasis: the mean and spread over their other messages."""

    mean: float
    spread: float


def tone_baseline(messages: Iterable[str]) -> Baseline:
    values = [emphasis(m) for m in messages if m.strip()]
    if len(values) < MIN_BASELINE_MESSAGES:
        return Baseline(*DEFAULT_BASELINE)
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return Baseline(mean, max(spread, MIN_SPREAD))


def intensity(text: str, baseline: Baseline) -> float:
    """0..1: how far above this user's usual tone the message is."""
    spike = (emphasis(text) - baseline.mean) / max(baseline.spread, MIN_SPREAD)
    return min(1.0, max(0.0, spike / SPIKE_FULL))


def salience(act: str, speaker: str = USER, level: float = 0.0) -> float:
    return max(act_floor(act, speaker), min(1.0, max(0.0, level)))


def annotate(text: str, speaker: str = USER, others: Sequence[str] = ()) -> dict[str, str]:
    """Metadata for a new note from one utterance: act, who said it, salience (and rule=1 for a
    rule). `others` are the same speaker's other messages in the transcript (their baseline)."""
    act = classify_act(text, speaker)
    level = intensity(text, tone_baseline(others)) if speaker == USER else 0.0
    sal = salience(act, speaker, level)
    meta = {"act": act, "by": USER if speaker == USER else AGENT, "sal": f"{sal:.2f}"}
    if looks_like_rule(text):
        meta["rule"] = "1"
    return meta


def note_act(note: Note) -> str:
    act = note.meta.get("act", "")
    return act if act in ACTS else classify_act(note.text, note.meta.get("by", USER))


def note_salience(note: Note) -> float:
    """Stored salience if any, else the floor of the note's act (a hand-written note is the
    user's), raised to the rule floor for a rule."""
    try:
        sal = float(note.meta["sal"])
    except (KeyError, ValueError):
        sal = act_floor(note_act(note), note.meta.get("by", USER))
    return max(sal, RULE_FLOOR) if is_rule(note) else min(1.0, max(0.0, sal))


# --- fading ----------------------------------------------------------------------------------

# FSRS-4.5 power forgetting curve. D and F are chosen so that R(S, S) = 0.9 exactly: stability
# is "the days until recall falls to 90%".
DECAY = -0.5
FACTOR = 19 / 81
S_MIN = 2.0  # days: a routine lookup is as good as fresh for a couple of days, then it is stale
S_MAX = 365.0  # days: an emphatic correction from the user holds at 90% for a year
S_CAP = 3650.0  # days: reinforcement never makes a note older than ten years look fresh
USE_GAIN = 2.0  # a note the session built on doubles its stability (FSRS grows S by ~2-3x)
CONTRADICT_FACTOR = 0.25  # a note the user called wrong keeps a quarter: it sinks, not vanishes
FADED_R = 0.5  # below this a note counts as faded in reports (it is still kept and searchable)


def retrievability(days: float, stability: float) -> float:
    """R(t, S) = (1 + F*t/S)^D; 1 at t=0, 0.9 at t=S, falling ever slower after."""
    days = max(0.0, days)
    return (1.0 + FACTOR * days / max(stability, 1e-9)) ** DECAY


def initial_stability(sal: float) -> float:
    """Log-linear between S_MIN (salience 0) and S_MAX (salience 1)."""
    sal = min(1.0, max(0.0, sal))
    return S_MIN * (S_MAX / S_MIN) ** sal


def reinforced(stability: float) -> float:
    return min(S_CAP, stability * USE_GAIN)


def weakened(stability: float) -> float:
    return max(S_MIN, stability * CONTRADICT_FACTOR)


def _date(text: str) -> datetime | None:
    try:
        return parse_time(text) if text else None
    except ValueError:
        return None


def days_between(earlier: datetime | None, later: datetime) -> float:
    return 0.0 if earlier is None else max(0.0, (later - earlier).total_seconds() / 86400.0)


def note_stability(note: Note, state: Mapping[str, Mapping] | None = None) -> float:
    entry = (state or {}).get(note.key) or {}
    try:
        return float(entry["s"])
    except (KeyError, TypeError, ValueError):
        return initial_stability(note_salience(note))


def note_retrievability(note: Note, now: datetime,
                        state: Mapping[str, Mapping] | None = None) -> float:
    """R of a note now: time since its last review (reinforcement) or its writing."""
    entry = (state or {}).get(note.key) or {}
    last = _date(str(entry.get("last", ""))) or _date(note.written)
    return retrievability(days_between(last, now), note_stability(note, state))


SCORE_BAND = 0.05  # judge scores closer than this are a tie: the judge's own noise is this size


def rank(notes: Sequence[T], scores: Mapping[str, float], now: datetime,
         state: Mapping[str, Mapping] | None = None) -> list[T]:
    """Order notes for adding under the budget: by judge score in bands of SCORE_BAND, then by
    retrievability, then by the exact score. `scores` are keyed by note key; one without a
    score counts 0. Anything with .text and .written and a .key or .id ranks (the cascade's
    items too: a long-term passage fades by its date like a note)."""
    def key(item: T) -> tuple[float, float, float]:
        note = as_note(item)
        score = float(scores.get(note.key, 0.0))
        return (-math.floor(score / SCORE_BAND), -note_retrievability(note, now, state), -score)

    return sorted(notes, key=key)


def as_note(item) -> Note:
    if isinstance(item, Note):
        return item
    return Note(text=item.text, id=getattr(item, "key", "") or getattr(item, "id", ""),
                written=getattr(item, "written", "") or "", meta=getattr(item, "meta", {}) or {})


# --- words -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")
_STOPWORD_TEXT = (
    "the a an and or but if then than that this these those there here with without from into"
    " onto for of on in at by to as is are was were be been being it its it's we our you your"
    " they them their he she his her i me my mine not no yes do does did done have has had can"
    " could would should will shall may might must just also only very so too now when where"
    " what which who whom how why all any some each every one two new old more most less same"
    " other about over under after before again once still already ever never always actually"
    " anymore longer instead let's lets use used using make made get got like want need please"
    " ok okay thanks sure go going went gone per via off out up down it'll we'll don't doesn't"
    " isn't aren't wasn't won't can't hasn't didn't that's")
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "ied", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                word += "y"
            elif suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]
            break
    return word


@functools.lru_cache(maxsize=8192)
def key_terms(text: str) -> frozenset[str]:
    """The distinctive words of a text: lowercased, stemmed, stopwords and short words out
    (identifiers like dbt_daily or 10.0.3.12 kept whole). Cached: consolidation asks for the
    same notes' words many times."""
    words = _WORD.findall(text.lower().replace("`", " "))
    return frozenset(_stem(w) for w in words
                     if w not in STOPWORDS and (len(w) >= 3 or any(c.isdigit() for c in w)))


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float | None:
    if a is None or b is None:
        return None
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0




# --- supersession ----------------------------------------------------------------------------

SUPERSEDE_COS = 0.6  # MiniLM: paraphrases of one fact sit above ~0.6, same-topic others below
SUPERSEDE_MIN_TERMS = 2  # and at least two distinctive words in common: the same thing named
SUPERSEDE_LEXICAL_SHARE = 0.4  # without vectors: this share of the old note's words recur
DUPLICATE_COS = 0.92  # near-duplicates: the same note said twice
DUPLICATE_JACCARD = 0.75  # without vectors: three quarters of the words are the same
_FROM_TO = re.compile(
    r"\b(?:moved|switched|swapped|migrated|changed|went|going)\s+(?:\w+\s+)?from\s+(?P<old>.+?)"
    r"\s+(?:to|for|over to)\s+(?P<new>[^.;,]+)", _I)
_NO_LONGER = re.compile(
    r"\b(?:no longer|not any ?more|instead of|replaced|rather than|dropped|retired)\s+"
    r"(?P<old>[^.;,]+)", _I)
_REPLACED_BY = re.compile(r"\b(?P<old>[\w.\-/]+)\s+(?:is|was|has been)\s+replaced\b", _I)
_SWAPPED = re.compile(r"\b(?:swapped|replaced|traded|exchanged)\s+(?:out\s+)?(?P<old>[\w.\-/ ]+?)"
                      r"\s+(?:for|with|by)\b", _I)
SUPERSEDING_ACTS = (CORRECTION, RETRACTION)


def superseded_ids(note: Note) -> set[str]:
    return {part for part in note.meta.get("supersedes", "").split(",") if part}


def is_superseded(note: Note) -> bool:
    return bool(note.meta.get("superseded_by"))


def visible(notes: Sequence[Note]) -> list[Note]:
    """Notes minus those superseded, whether the old note says so (superseded_by) or only the
    newer one does (supersedes=<id>, e.g. after a hand edit)."""
    hidden = set()
    for note in notes:
        hidden |= superseded_ids(note)
    return [n for n in notes if not is_superseded(n) and n.key not in hidden]


def explicit_old_terms(text: str) -> set[str]:
    """The words a correction names as the old state: 'moved from X to Y', 'no longer X'."""
    terms: set[str] = set()
    for pattern in (_FROM_TO, _NO_LONGER, _REPLACED_BY, _SWAPPED):
        for match in pattern.finditer(text):
            terms |= key_terms(match.group("old"))
    return terms


def same_subject(new: Note, old: Note, cos: float | None = None) -> bool:
    """Whether a correction `new` is about the same thing as `old`."""
    new_terms, old_terms = key_terms(new.text), key_terms(old.text)
    shared = new_terms & old_terms
    named_old = explicit_old_terms(new.text)
    if named_old and named_old <= old_terms and shared:
        return True  # "moved from X to Y" and the old note says X
    if cos is not None:
        return cos >= SUPERSEDE_COS and len(shared) >= SUPERSEDE_MIN_TERMS
    return (len(shared) >= SUPERSEDE_MIN_TERMS
            and len(shared) >= SUPERSEDE_LEXICAL_SHARE * max(1, len(old_terms)))


def supersedes(new: Note, old: Note, cos: float | None = None) -> bool:
    """A correction or retraction on the same subject, not a note about itself."""
    if new.key == old.key or note_act(new) not in SUPERSEDING_ACTS:
        return False
    return same_subject(new, old, cos)


def near_duplicate(a: Note, b: Note, cos: float | None = None) -> bool:
    if a.key == b.key:
        return False
    if cos is not None:
        return cos >= DUPLICATE_COS
    ta, tb = key_terms(a.text), key_terms(b.text)
    return bool(ta | tb) and len(ta & tb) / len(ta | tb) >= DUPLICATE_JACCARD


def _order(note: Note) -> tuple[str, int]:
    return (note.written or "", note.line)


@dataclass(frozen=True)
class Link:
    """`new` hides `old`: reason is 'supersedes' (a correction) or 'duplicate' (a merge)."""

    new: str
    old: str
    reason: str


Similarity = Callable[[Note, Note], "float | None"]  # cosine of two notes, None if unknown
COMMON_TERM_SHARE = 0.2  # a word in more than a fifth of the notes names no subject


def find_links(notes: Sequence[Note], similarity: Similarity | None = None) -> list[Link]:
    """Supersessions and merges among the visible notes: each older note is hidden by at most
    one newer note, the nearest earlier match; nothing already hidden is looked at again. Only
    pairs that share a distinctive word are compared (an inverted index), so thousands of
    notes stay cheap."""
    live = sorted(visible(notes), key=_order)
    links: list[Link] = []
    taken: set[str] = set()
    for index, new in enumerate(live):
        for old_index in _candidates(live, index):
            old = live[old_index]
            if old.key in taken:
                continue
            reason = _link_reason(new, old, similarity(new, old) if similarity else None)
            if reason:
                links.append(Link(new.key, old.key, reason))
                taken.add(old.key)
                break
    return links


def _link_reason(new: Note, old: Note, cos: float | None) -> str:
    if near_duplicate(new, old, cos):
        return "duplicate"
    if supersedes(new, old, cos):
        return "supersedes"
    return ""


def _candidates(live: Sequence[Note], index: int) -> list[int]:
    """Earlier notes sharing a distinctive, not too common word with live[index], nearest
    first."""
    postings = _postings(tuple(n.text for n in live))
    limit = max(2, int(COMMON_TERM_SHARE * len(live)))
    found: set[int] = set()
    for term in key_terms(live[index].text):
        ids = postings.get(term, ())
        if len(ids) <= limit:
            found.update(i for i in ids if i < index)
    return sorted(found, reverse=True)


@functools.lru_cache(maxsize=4)
def _postings(texts: tuple[str, ...]) -> dict[str, list[int]]:
    postings: dict[str, list[int]] = {}
    for position, text in enumerate(texts):
        for term in key_terms(text):
            postings.setdefault(term, []).append(position)
    return postings


# --- reinforcement ---------------------------------------------------------------------------

USE_MIN_TERMS = 2  # a reply that repeats two of a note's distinctive words built on it
_CONTRADICTION_CUES = re.compile(
    r"\b(that'?s (wrong|not right|not true|outdated|old|stale)|is wrong|was wrong|not true"
    r"|outdated|out of date|no longer|not any ?more|anymore|isn'?t (right|true|the case)"
    r"|we don'?t do that|that changed|has changed|moved)\b|^\s*(no|nope|wrong)\b", _I)
USED = "used"
CONTRADICTED = "contradicted"


def distinctive_terms(note: Note, message: str = "") -> set[str]:
    """The note's words that the prompt did not already carry: echoing those means the note,
    not the question, was used."""
    return key_terms(note.text) - key_terms(message)


def usage(note: Note, message: str, reply: str, next_user: str) -> str | None:
    """How the session treated a note added to `message`: USED when the reply or the next user
    turn builds on its distinctive words, CONTRADICTED when the next user turn says it is wrong
    or outdated while speaking of it, None when neither."""
    terms = distinctive_terms(note, message)
    in_reply = len(terms & key_terms(reply))
    in_next = len(terms & key_terms(next_user))
    if next_user and _CONTRADICTION_CUES.search(next_user) and (in_next or in_reply):
        return CONTRADICTED
    if in_reply >= USE_MIN_TERMS or in_next >= USE_MIN_TERMS:
        return USED
    return None


def apply_usage(entry: Mapping | None, note: Note, verdict: str, when: str) -> dict:
    """The state entry of a note after one verdict: stability up or down, review time now."""
    stability = float((entry or {}).get("s") or initial_stability(note_salience(note)))
    out = dict(entry or {})
    if verdict == USED:
        out["s"] = round(reinforced(stability), 3)
        out["last"] = when
        out["used"] = int(out.get("used", 0)) + 1
    elif verdict == CONTRADICTED:
        out["s"] = round(weakened(stability), 3)
        out["contradicted"] = int(out.get("contradicted", 0)) + 1
    return out


# --- rules -----------------------------------------------------------------------------------

_RULE_PREFIXES = ("never", "always", "do not", "don't", "dont", "must not", "must", "no one may",
                  "nobody may", "under no circumstances", "rule:", "team rule:", "hard rule:",
                  "policy:", "constraint:")
_RULE_ANYWHERE = re.compile(r"\b(team rule|hard rule|hard constraint|house rule)\b", _I)
RULE_CUE_WORDS = frozenset({"never", "always", "must", "rule", "team", "hard", "constraint",
                            "policy", "don't", "not"})
RULE_MIN_TERMS = 2  # two of the rule's subject words in the message: its subject came up
RULE_SUBJECT_SHARE = 0.6  # and most of them: "DAG" and "dbt_daily" alone are not "backfilling
#                           dbt_daily", three of its four words are
RULE_COS = 0.45  # or one shared word and an embedding this close (a paraphrased subject)
_CLAUSE_END = re.compile(r"[.;:,](\s|$)|\s[-\u2013\u2014]\s")
RULES_SHARE = 0.3  # of budget.chars: rules are short lines and must leave room for the answer


def _starts_like_rule(text: str) -> bool:
    head = text[:30].lstrip().lower()
    for prefix in _RULE_PREFIXES:
        if head.startswith(prefix):
            rest = head[len(prefix):len(prefix) + 1]
            return not rest or not (rest.isalnum() or rest in "_-'") or prefix.endswith(":")
    return False


def looks_like_rule(text: str) -> bool:
    if _starts_like_rule(text):
        return True
    # a plain substring test first: the prompt path asks this of every note
    return ("ule" in text or "onstraint" in text) and bool(_RULE_ANYWHERE.search(text))


def is_rule(note: Note) -> bool:
    flag = note.meta.get("rule", "")
    if flag:
        return flag.lower() in {"1", "true", "yes"}
    return looks_like_rule(note.text)


def rule_terms(note: Note) -> frozenset[str]:
    """The rule's subject: the words of its first clause, the imperative itself ("Never apply
    terraform on a Friday"), without the reason that follows it."""
    match = _CLAUSE_END.search(note.text)
    clause = note.text[: match.start()] if match else note.text
    return key_terms(clause) - RULE_CUE_WORDS


def rule_applies(note: Note, message: str, cos: float | None = None) -> bool:
    subject = rule_terms(note)
    shared = subject & key_terms(message)
    if len(shared) >= RULE_MIN_TERMS and len(shared) >= RULE_SUBJECT_SHARE * len(subject):
        return True
    return bool(shared) and cos is not None and cos >= RULE_COS


def rules_for(message: str, notes: Sequence[Note], budget_chars: int | None = None,
              similarity: Callable[[Note], float | None] | None = None) -> list[Note]:
    """The visible rules whose subject the message brings up, most specific first, as many as
    fit in `budget_chars` (the rules' share of the block; None: no limit)."""
    rules = [n for n in notes if is_rule(n)]  # rare: the hidden set is built only if any
    if not rules:
        return []
    found = []
    for note in visible(notes):
        if not is_rule(note):
            continue
        cos = similarity(note) if similarity else None
        if rule_applies(note, message, cos):
            found.append((len(rule_terms(note) & key_terms(message)), note))
    found.sort(key=lambda pair: (-pair[0], len(pair[1].text)))
    chosen, used = [], 0
    for _, note in found:
        if budget_chars is not None and used + len(note.text) > budget_chars:
            continue
        chosen.append(note)
        used += len(note.text)
    return chosen


def rules_budget(total_chars: int) -> int:
    return int(total_chars * RULES_SHARE)
