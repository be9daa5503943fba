"""Acts and salience: what kind of utterance made a note (a correction outranks a routine
lookup), who said it, and how intensely against that person's usual tone. docs/lifecycle.md."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memsift.memory.notes import Note

T = TypeVar("T")
_I = re.IGNORECASE

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


# --- rules are recognised by their form --------------------------------------------------

_RULE_PREFIXES = ("never", "always", "do not", "don't", "dont", "must not", "must", "no one may",
                  "nobody may", "under no circumstances", "rule:", "team rule:", "hard rule:",
                  "policy:", "constraint:")
_RULE_ANYWHERE = re.compile(r"\b(team rule|hard rule|hard constraint|house rule)\b", _I)


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
