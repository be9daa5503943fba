"""The offline keep decision for one exchange (a user message and the assistant's reply).

Keep what will save redoing work if the subject comes back: a choice and its reason, a
constraint, an incident with its cause and fix, a procedure. Status, one-off actions,
reactions and what the project's notes or long-term store already hold are not notes.

A logistic head over the MiniLM vectors of the message and the reply (memsift.model.embed),
cue features (reason words, error names, action replies, length), the turn after (was the
proposal taken up?), the reply before (was this message the "ok, do that" that settles what it
proposed?), a request carried out against a question answered with a reason, what kind of
message it was (the prompt path's kind encoder), and how much of the exchange is already held:
by the project's notes and passages, and by what the session said before. (Hashed words and
the reply before's vector were tried: they fit the training projects and lose on the
validation ones.) Trained on the labelled corpus by memsift.judge.train_keep; the weights
(memsift/data/keep_head.npz) and where they came from (keep_head.json) ship together.

`restated()` is the other half of "already held": which note or passage an exchange repeats,
so the session end reinforces or supersedes it instead of writing it again.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from memsift.model.lexical import content_words

DIM = 384  # MiniLM's vector size (memsift.model.embed.DIM)
KEEP_THRESHOLD = 0.5  # the recorded threshold replaces this once the head is trained
RESTATE_THRESHOLD = 0.5  # the recorded one replaces this too

EmbedFn = Callable[[Sequence[str]], np.ndarray]
# (message, reply before, user's message before) -> the kind encoder's outputs, (n, 12)
KindFn = Callable[[Sequence[tuple[str, str, str]]], np.ndarray]
N_KIND = 12  # the kind encoder's eleven kinds (softmax) and its need for memory (sigmoid)

_WORD = re.compile(r"[a-z][a-z0-9_']*|\d+(?:\.\d+)?")
REASON_CUES = ("because", "so that", "since", "instead of", "otherwise", "decided", "root cause",
               "the fix was", "caused", "never", "always", "must", "only", "don't", "do not",
               "not yet", "until", "first", "then", "keep it", "watch for", "if it fails",
               "rule", "from now on", "so ", "which is why")
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\berror\[|\bpanicked\b|\bSQLSTATE|"
                         r"\bOOM\b|\bfatal\b|\bEXC_\w+")
_MEASURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|MB|GB|%|seconds|minutes|rows|px)\b")
_REACTION = re.compile(r"(?i)^\s*(?:thanks|thank you|ok|okay|great|perfect|nice|cool|lgtm|"
                       r"hmm|yes|merci|danke|parfait|d'accord|super)\b")
_ACTION_REPLY = re.compile(r"(?i)^\s*(?:done|added|ran|opened|pushed|merged|created|updated|"
                           r"reverted|deleted|removed|renamed|committed|rerun|re-ran|passed|"
                           r"deployed|tagged|sent|shipped|moved|changed|wrote|fixed)\b")
_STATUS = re.compile(r"(?i)\b(?:still (?:needs|missing|open|waiting)|left (?:before|to do)|"
                     r"not started|in progress|blocked on|waiting (?:for|on)|passed|failed|"
                     r"green|red|took \d)")
_HELD_CUE = re.compile(r"(?i)\b(?:as (?:i|we) said|as noted|the note says|(?:in|from) (?:the )?"
                       r"(?:memory|notes)|you told me|like last time|that's the \w+ one|"
                       r"again|known (?:flake|issue)|already)\b")
_UNDECIDED = re.compile(r"(?i)\b(?:nothing (?:decided|in memory)|not decided|no note|"
                        r"i'd|i would|we could|maybe|up to you)\b")
_NAME = re.compile(r"`[^`]+`|\b[\w-]+\.(?:py|ts|tsx|js|go|rs|rb|java|kt|swift|yaml|yml|json|"
                   r"toml|sql|md|sh|tf|c|h|cpp)\b|\b[a-z]+_[a-z_]+\b|\b[A-Z][a-z]+[A-Z]\w+\b")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _cues(user: str, reply: str) -> list[float]:
    lowered = reply.lower()
    words = len(_words(reply))
    return [
        math.log1p(sum(lowered.count(cue) for cue in REASON_CUES)),
        math.log1p(len(_ERROR_NAME.findall(user + " " + reply))),
        math.log1p(len(_MEASURE.findall(reply))),
        math.log1p(words) / 5.0,
        math.log1p(len(_words(user))) / 5.0,
        1.0 if _REACTION.match(user) else 0.0,
        1.0 if words < 15 else 0.0,
        1.0 if user.rstrip().endswith("?") else 0.0,
        1.0 if _ACTION_REPLY.match(reply) else 0.0,
        math.log1p(len(_STATUS.findall(reply))),
        math.log1p(len(_HELD_CUE.findall(user + " " + reply))),
        math.log1p(len(_UNDECIDED.findall(reply))),
        math.log1p(len(_NAME.findall(user + " " + reply))),
    ]


N_CUES = 13
N_HELD = 9
N_AROUND = 9
_AGREE = re.compile(r"(?i)^\s*(?:ok(?:ay)?|yes|yep|yeah|sure|agreed|do it|go ahead|go with|"
                    r"let'?s|sounds good|perfect|great|fine|good|ship it|d'accord|parfait|"
                    r"beleza|ja|genau|makes sense|lgtm)\b")
_PUSHBACK = re.compile(r"(?i)^\s*(?:no|nope|wait|actually|hmm|not|don'?t|that'?s wrong|"
                       r"instead|rather)\b")


def _around(user: str, reply: str, next_user: str, words: set[str], seen: set[str]
            ) -> list[float]:
    """The turn after (was the proposal taken up?) and what the reply says that nothing
    before it did (novel names and numbers)."""
    reply_words = content_words(reply)
    novel = reply_words - seen - content_words(user)
    names = set(_NAME.findall(reply))
    return [
        1.0 if next_user else 0.0,
        1.0 if _AGREE.match(next_user) else 0.0,
        1.0 if _PUSHBACK.match(next_user) else 0.0,
        math.log1p(len(_words(next_user))) / 5.0,
        math.log1p(len(novel)),
        len(novel) / max(1, len(reply_words)),
        len(reply_words & seen) / max(1, len(reply_words)),
        math.log1p(len([n for n in names if n.lower().strip("`") not in " ".join(seen)])),
        math.log1p(len(words)),
    ]


N_BEFORE = 14
N_ASKED = 11
_PROPOSAL = re.compile(r"(?i)\b(?:i'd|i would|should i|want me to|shall i|we could|you could|"
                       r"options?|recommend|suggest|propose|either|or keep|prefer|which one|"
                       r"do you want)\b")
_SHORT_ANSWER = re.compile(r"(?i)^\s*(?:ok(?:ay)?|yes|yep|yeah|sure|agreed|do it|do that|go|"
                           r"go ahead|go with|let'?s|sounds good|perfect|great|fine|good|ship it|"
                           r"leave it|keep it|that one|the first|the second|option|b\b|a\b|"
                           r"makes sense|lgtm|both|neither|no)\b")
_REQUEST = re.compile(r"(?i)^\s*(?:please\s+)?(?:add|make|move|rename|run|rerun|commit|push|open|"
                      r"fix|change|set|bump|update|remove|delete|implement|show|write|create|"
                      r"deploy|merge|revert|tag|ship|release|check|try|use|put|switch|do|go|"
                      r"apply|map|purge|gate|send|tell|note)\b")
_DONE = re.compile(r"(?i)^\s*(?:done|ok|set|yes)\b")
_WHY = re.compile(r"(?i)\bwhy\b|\bhow come\b|\bwhat was\b|\bhow do (?:i|we)\b")
STRONG_REASONS = ("because", "so that", "since", "otherwise", "root cause", "caused",
                  "the fix was", "which is why", "instead of", "never", "always", "must", "until",
                  "rule", "from now on", "decided")


def _before(user: str, reply: str, before: str) -> list[float]:
    """The reply before the message: a short "ok, do that" settles what it proposed or asked,
    so the choice is kept on this exchange while its content sits in the one before."""
    answer = 1.0 if _SHORT_ANSWER.match(user) else 0.0
    short = 1.0 if len(_words(user)) <= 6 else 0.0
    lowered = before.lower()
    reasons = math.log1p(sum(lowered.count(cue) for cue in REASON_CUES))
    proposals = math.log1p(len(_PROPOSAL.findall(before)))
    asked = 1.0 if before.rstrip().endswith("?") else 0.0
    reply_words = content_words(reply)
    carried = len(reply_words & content_words(before)) / max(1, len(reply_words))
    return [1.0 if before else 0.0, answer, short, reasons, proposals, asked,
            answer * reasons, answer * proposals, short * proposals, short * asked,
            answer * asked, carried, short * carried, math.log1p(len(_words(before))) / 5.0]


def _asked(user: str, reply: str) -> list[float]:
    """A request carried out (and nothing more said) against a question answered with a reason:
    the two a logistic head cannot tell apart from the cues one at a time."""
    lowered = reply.lower()
    reasons = sum(lowered.count(cue) for cue in STRONG_REASONS)
    acted = 1.0 if _ACTION_REPLY.match(reply) else 0.0
    request = 1.0 if _REQUEST.match(user) else 0.0
    done = 1.0 if _DONE.match(reply) else 0.0
    bare = 1.0 if reasons == 0 else 0.0
    why = 1.0 if _WHY.search(user) else 0.0
    question = 1.0 if "?" in user else 0.0
    return [request, done, acted * bare, request * bare, request * acted, request * acted * bare,
            done * bare, why, why * (1 - bare), question * (1 - bare), math.log1p(reasons)]


@dataclass(frozen=True)
class Held:
    """What the project already holds: its notes' and passages' texts and their vectors."""

    texts: Sequence[str] = ()
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, DIM), np.float32))
    words: tuple[frozenset[str], ...] = ()

    @classmethod
    def of(cls, texts: Sequence[str], vectors: np.ndarray) -> Held:
        return cls(list(texts), np.asarray(vectors, np.float32).reshape(-1, DIM),
                   tuple(frozenset(content_words(t)) for t in texts))


def _share(words: set[str], others: Sequence[frozenset[str]]) -> np.ndarray:
    """For each other text, the share of `words` it also has."""
    if not words or not others:
        return np.zeros(len(others), np.float32)
    return np.asarray([len(words & o) / len(words) for o in others], np.float32)


def _top(values: np.ndarray, k: int = 1) -> float:
    if not len(values):
        return 0.0
    return float(np.sort(values)[-k]) if len(values) >= k else 0.0


def _held_features(u: np.ndarray, a: np.ndarray, words: set[str], held: Held,
                   earlier: np.ndarray, earlier_words: Sequence[frozenset[str]],
                   restate: np.ndarray | None) -> list[float]:
    """How much of the exchange the project or the session already has; with the
    restatement head, how sure it is that the exchange repeats one held item."""
    repeats = 0.0
    if restate is not None and len(held.texts):
        repeats = float(sigmoid(restate_pairs(u, a, words, held) @ restate).max())
    cos_a = held.vectors @ a if len(held.texts) else np.zeros(0)
    cos_u = held.vectors @ u if len(held.texts) else np.zeros(0)
    share = _share(words, held.words)
    said = earlier @ a if len(earlier) else np.zeros(0)
    said_share = _share(words, earlier_words)
    return [_top(cos_a), _top(cos_a, 2), _top(cos_u), _top(share), _top(cos_a + share),
            _top(said), _top(said_share), _top(said + said_share), repeats]


@dataclass(frozen=True)
class SessionExchange:
    user: str
    reply: str
    before: str = ""  # the reply before this message


def in_order(pairs: Sequence[tuple[str, str]]) -> list[SessionExchange]:
    """One session's (message, reply) pairs as exchanges, each knowing the reply before it."""
    return [SessionExchange(user, reply, pairs[i - 1][1] if i else "")
            for i, (user, reply) in enumerate(pairs)]


def encoder_kinds(reads: Sequence[tuple[str, str, str]], batch: int = 32) -> np.ndarray:
    """The prompt path's kind encoder (memsift/data/kind_encoder.npz) over each message in its
    context: what kind of message it was (an instruction, a decision, a reaction...) says much
    of whether its exchange is a note. Zeros where the encoder cannot load."""
    from memsift.model.cross import KIND_FILE, CrossError, kind_ids, load

    try:
        encoder = load(KIND_FILE)
    except CrossError:
        return np.zeros((len(reads), N_KIND), np.float32)
    out = [np.zeros((0, N_KIND), np.float32)]
    for start in range(0, len(reads), batch):
        encoded = [kind_ids(*read) for read in reads[start:start + batch]]
        out.append(encoder.logits_ids([i for i, _ in encoded], [t for _, t in encoded]))
    return np.concatenate(out).astype(np.float32)


def _kind_features(logits: np.ndarray) -> np.ndarray:
    kinds = np.exp(logits[:, :11] - logits[:, :11].max(axis=1, keepdims=True))
    kinds /= kinds.sum(axis=1, keepdims=True)
    return np.concatenate([kinds, sigmoid(logits[:, 11:12])], axis=1).astype(np.float32)


def session_rows(exchanges: Sequence[SessionExchange], held: Held, embed_fn: EmbedFn,
                 restate: np.ndarray | None = None, kinds_fn: KindFn | None = None,
                 wanted: Sequence[int] | None = None) -> np.ndarray:
    """One feature row per exchange of a session, in order: each reads the exchange, the
    message after it and everything the session and the project held before it.
    `restate`: the restatement head's weights (Head.restate); `kinds_fn`: the kind encoder
    (encoder_kinds unless given: training passes a cached one); `wanted`: the positions whose
    rows will be read (all unless given): the kind encoder runs on those alone, so a pass over
    a long session's last few exchanges does not read the whole session again."""
    n = len(exchanges)
    if not n:
        return np.zeros((0, n_features()), np.float32)
    reads = [(e.user, exchanges[i - 1].reply if i else e.before,
              exchanges[i - 1].user if i else "") for i, e in enumerate(exchanges)]
    positions = list(range(n)) if wanted is None else sorted(set(wanted))
    kinds = np.zeros((n, N_KIND), np.float32)
    if positions:
        kinds[positions] = _kind_features(np.asarray(
            (kinds_fn or encoder_kinds)([reads[i] for i in positions]), np.float32))
    vectors = np.asarray(embed_fn([e.user for e in exchanges] + [e.reply for e in exchanges]),
                         np.float32)
    users, replies = vectors[:n], vectors[n:]
    words = [frozenset(content_words(e.user + " " + e.reply)) for e in exchanges]
    rows = []
    seen = set().union(*held.words) if held.words else set()
    for i, exchange in enumerate(exchanges):
        next_user = exchanges[i + 1].user if i + 1 < n else ""
        rows.append(np.concatenate([
            users[i], replies[i],
            np.asarray(_cues(exchange.user, exchange.reply), np.float32),
            np.asarray(_held_features(users[i], replies[i], set(words[i]), held,
                                      replies[:i], words[:i], restate), np.float32),
            np.asarray(_around(exchange.user, exchange.reply, next_user, set(words[i]), seen),
                       np.float32),
            np.asarray(_before(exchange.user, exchange.reply, exchange.before), np.float32),
            np.asarray(_asked(exchange.user, exchange.reply), np.float32),
            kinds[i],
            np.ones(1, np.float32),  # bias
        ]))
        seen |= words[i]
    return np.stack(rows).astype(np.float32)


def n_features() -> int:
    return 2 * DIM + N_CUES + N_HELD + N_AROUND + N_BEFORE + N_ASKED + N_KIND + 1


# --- restatement: which held item an exchange repeats --------------------------------------

def restate_pairs(user_vec: np.ndarray, reply_vec: np.ndarray, words: set[str],
                  held: Held) -> np.ndarray:
    """One row per held item: how closely the exchange repeats it."""
    if not len(held.texts):
        return np.zeros((0, 5), np.float32)
    cos_a, cos_u = held.vectors @ reply_vec, held.vectors @ user_vec
    share = _share(words, held.words)
    back = np.asarray([len(words & o) / max(1, len(o)) for o in held.words], np.float32)
    return np.stack([cos_a, cos_u, share, back, np.ones(len(held.texts))], axis=1
                    ).astype(np.float32)


# --- the weights --------------------------------------------------------------------------

def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def weights_path() -> Path:
    return Path(str(resources.files("memsift.data").joinpath("keep_head.npz")))


def provenance_path() -> Path:
    return weights_path().with_suffix(".json")


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def cross_probability(exchanges: Sequence[SessionExchange], path: Path | None = None
                      ) -> np.ndarray:
    """The keep cross-encoder's probability for each exchange (memsift.model.cross)."""
    from memsift.model.cross import KEEP_CROSS_FILE, load

    return load(path or KEEP_CROSS_FILE).score_exchanges(
        [(e.user, e.reply, e.before) for e in exchanges])


def stacked(stack: np.ndarray, head_p: np.ndarray, cross_p: np.ndarray) -> np.ndarray:
    """The head's and the cross-encoder's probabilities, stacked (weights, then bias)."""
    return sigmoid(stack[0] * logit(head_p) + stack[1] * logit(cross_p) + stack[2])


@dataclass(frozen=True)
class Head:
    """The trained weights: the keep head, the restatement head, their thresholds; with the
    keep cross-encoder, the stack of the two and the threshold of the head alone (for a
    machine where the cross-encoder cannot load)."""

    keep: np.ndarray
    restate: np.ndarray
    keep_threshold: float = KEEP_THRESHOLD
    restate_threshold: float = RESTATE_THRESHOLD
    stack: np.ndarray | None = None
    head_threshold: float | None = None

    def keep_probability(self, rows: np.ndarray) -> np.ndarray:
        """The head alone."""
        return sigmoid(rows @ self.keep)

    @property
    def alone_threshold(self) -> float:
        """The bar for the head's own probability where the stack is not used."""
        return self.head_threshold if self.head_threshold is not None else self.keep_threshold

    def decide(self, rows: np.ndarray, exchanges: Sequence[SessionExchange],
               cross_file: Path | None = None, holds_nothing: bool = False
               ) -> tuple[np.ndarray, float]:
        """Each exchange's probability of being kept, and the threshold to read it against:
        the stack when there is one and the cross-encoder loads, else the head alone.

        `holds_nothing`: the project holds no note or passage yet (its first session). The
        cross-encoder reads the exchange alone, never what is held, and learned from sessions
        where a "why X?" is mostly answered from the notes, so it reads a reason given for
        the first time as a read-back; the stack was fitted where projects hold something.
        The head, which weighs what is held, decides alone there."""
        alone = self.keep_probability(rows)
        if self.stack is None:
            return alone, self.keep_threshold
        if holds_nothing:
            return alone, self.alone_threshold
        from memsift.model.cross import CrossError
        from memsift.model.embed import EmbedError

        try:
            cross = cross_probability(exchanges, cross_file)
            return stacked(self.stack, alone, cross), self.keep_threshold
        except (CrossError, EmbedError):
            return alone, self.alone_threshold

    def restate_probability(self, pairs: np.ndarray) -> np.ndarray:
        return sigmoid(pairs @ self.restate)


def save(head: Head, path: Path | None = None) -> None:
    extra = {} if head.stack is None else {
        "stack": np.asarray(head.stack, np.float32),
        "head_threshold": np.asarray(head.head_threshold)}
    np.savez(path or weights_path(), keep=head.keep, restate=head.restate,
             thresholds=np.asarray([head.keep_threshold, head.restate_threshold]),
             n_features=np.asarray(n_features()), **extra)


@lru_cache(maxsize=1)
def load_head(path: Path | None = None) -> Head:
    with np.load(path or weights_path()) as data:
        if int(data["n_features"]) != n_features():
            raise ValueError("keep head was trained with other features; retrain it")
        keep_t, restate_t = (float(v) for v in data["thresholds"])
        stack = data["stack"] if "stack" in data.files else None
        head_t = float(data["head_threshold"]) if "head_threshold" in data.files else None
        return Head(data["keep"], data["restate"], keep_t, restate_t, stack, head_t)


def recorded_provenance() -> dict:
    return json.loads(provenance_path().read_text(encoding="utf-8"))


# --- the old hand-written set, kept as a check on wording of its own ---------------------

@dataclass(frozen=True)
class Exchange:
    user: str
    assistant: str
    keep: int = 0
    template: str = ""


def load_exchanges(name: str = "keep_exchanges_hand.jsonl") -> list[Exchange]:
    text = resources.files("memsift.data").joinpath(name).read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [Exchange(r["user"], r["assistant"], int(r["keep"]), r.get("template", ""))
            for r in rows]
