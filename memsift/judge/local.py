"""The offline decision model: MiniLM embeddings on numpy, rules, and three small trained heads.

No key, no server, no download. The heads live in memsift/data/judge_local.npz, trained by
`python -m memsift.judge.train_kinds` on the hand-written sets beside it.

- set_turns(): the session's last turns; the message is read with the exchange before it
  (features.context_of), as the heads were trained on the labelled corpus (training/judge.py).
- kind(): rules where they are sure ("thanks" is a reaction, "commit this" an action), else the
  kind encoder (model/cross.py KIND_FILE, training/kind_encoder.py): MiniLM's first layers,
  fine-tuned to read the message with the turn before it, which also says whether the turn
  needs memory at all. Heads trained without it fall back to a softmax head over the message's
  and the turn before's vectors and cue features (memsift.judge.features), which the item head
  still reads as its kind inputs.
- score(): per item, the probability that it answers the message in its context: a small MLP
  over features.item_matrix (cosines with the message, with the message read in its context
  and with the turn before, shared rare words, rank and gap among the candidates, the kind).
  `score_vectors()` is the same with vectors the caller already holds (cached note vectors):
  no re-embedding. The threshold is the one chosen when the heads were trained.
- worth_keeping(): a logistic head: is this a choice, constraint, problem or procedure?
- choose(): the generic question, answered by embedding similarity of the context to each
  option. The fixed questions of the prompt path go through the specialised methods above.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from memsift.clock import Deadline
from memsift.judge.base import KINDS, JudgeError
from memsift.judge.features import (
    EMBED_SCALE,
    context_of,
    item_matrix,
    kind_context_features,
    kind_features,
    pair_features,
    with_context,
    worth_features,
)
from memsift.judge.rules import rule_kind
from memsift.judge.rules import sure as _sure
from memsift.model.cross import CROSS_FILE, KIND_FILE
from memsift.model.embed import EmbedError
from memsift.model.embed import embed as _embed_model
from memsift.paths import PACKAGE_DATA

HEADS_FILE = PACKAGE_DATA / "judge_local.npz"

# Chosen by train_kinds.py (best F1 on the training pairs, same-subject notes as negatives);
# the file's value wins, this is what it was when the heads were last trained.
SCORE_THRESHOLD = 0.36
CHOOSE_TEMPERATURE = 0.05  # cosines differ by hundredths; this spreads them into probabilities
VECTOR_CACHE = 64  # texts embedded once per process (kind then score on the same message)
CROSS_CEILING = 0.99  # above any it gave on 720 validation pairs (their highest: 0.53)


class LocalJudge:
    """The Judge protocol, offline. Every method embeds at most the texts it is given."""

    name = "local"

    def __init__(self, heads_file: Path = HEADS_FILE) -> None:
        self.heads_file = heads_file
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.context = ""  # the exchange before the message (set_turns)
        self.reply = ""  # the agent's reply just before the message (the cross-encoder's)
        self.before = ""  # the user's message before that reply (the kind encoder's)
        self._kinds: dict[str, dict[str, float]] = {}  # the linear head's, the item head's input
        self._read: dict[str, np.ndarray] = {}  # the kind encoder's outputs per message

    def set_turns(self, turns) -> None:
        """The session's last turns before the message, as (role, text), oldest first."""
        turns = [(role, text) for role, text in turns]
        self.context = context_of(turns)
        self.reply = turns[-1][1] if turns and turns[-1][0] == "assistant" else ""
        users = [text for role, text in turns if role == "user"]
        self.before = users[-1] if users else ""
        self._kinds.clear()
        self._read.clear()

    def prepare(self, message: str) -> None:
        """Load what scoring `message` reads (the heads, the cross-encoder, the vectors of
        the message in its context) on the calling thread, before threads score at once:
        they then share it instead of each making it, and import nothing concurrently."""
        heads = _heads(self.heads_file)
        if "item_w1" not in heads:
            return
        self._vector(message)
        self._vector(with_context(message, self.context))
        if self.context:
            self._vector(self.context)
        if "stack_w" in heads:
            _encoder(CROSS_FILE)
        if self._reads_kinds:
            self._encoder_outputs(message)

    @classmethod
    def from_settings(cls, settings) -> LocalJudge:
        """The local judge needs no settings; the signature matches the other backends."""
        return cls()

    # -- kinds ---------------------------------------------------------------------------

    def kind(self, message: str, deadline: Deadline | None = None) -> dict[str, float]:
        """Probability of each of the eleven KINDS for a user message."""
        ruled = rule_kind(message)
        if ruled is not None:
            return _sure(ruled)
        if self._reads_kinds:
            _check(deadline)
            return _kind_probs(self._encoder_outputs(message))
        vector = self._vector(message)
        _check(deadline)
        return self._kind_head(message, vector)

    def kinds(self, messages: Sequence[str]) -> list[dict[str, float]]:
        """kind() for many messages, each read with the same turns before (benchmarks)."""
        if self._reads_kinds:
            return [self.kind(m) for m in messages]
        vectors = embed(list(messages))
        return [_sure(ruled) if (ruled := rule_kind(m)) is not None else self._kind_head(m, v)
                for m, v in zip(messages, vectors)]

    def needs_memory(self, message: str) -> float | None:
        """The kind encoder's probability that the message, in its context, needs memory at
        all (None for heads trained without it). A message the rules decide (a reaction, an
        action) needs none."""
        if not self._reads_kinds:
            return None
        if rule_kind(message) is not None:
            return 1e-3
        return float(1.0 / (1.0 + np.exp(-self._encoder_outputs(message)[len(KINDS)])))

    @property
    def _reads_kinds(self) -> bool:
        return "kind_encoder_sha256" in _heads(self.heads_file)

    def _encoder_outputs(self, message: str) -> np.ndarray:
        out = self._read.get(message)
        if out is None:
            out = self._read[message] = _encoder(KIND_FILE).kind_logits(
                message, self.reply, self.before)
        return out

    def _kind_head(self, message: str, vector: np.ndarray, context: str | None = None
                   ) -> dict[str, float]:
        heads = _heads(self.heads_file)
        context = self.context if context is None else context
        if "kindc_w" in heads:
            context_vec = self._vector(context) if context else None
            x = kind_context_features(message, vector, context_vec)
            probs = _softmax(x @ heads["kindc_w"] + heads["kindc_b"])
        else:
            x = np.concatenate([vector * EMBED_SCALE, kind_features(message)])
            probs = _softmax(x @ heads["kind_w"] + heads["kind_b"])
        out = {kind: float(p) for kind, p in zip(KINDS, probs)}
        self._kinds[message] = out
        return out

    def _kinds_of(self, message: str) -> np.ndarray:
        """The message's kind probabilities, as the item head reads them (rules included):
        the linear head's, which it was trained on, whether or not kind() reads the encoder."""
        probs = self._kinds.get(message)
        if probs is None:
            ruled = rule_kind(message)
            probs = (_sure(ruled) if ruled is not None
                     else self._kind_head(message, self._vector(message)))
        return np.asarray([probs[k] for k in KINDS], np.float32)

    # -- items ---------------------------------------------------------------------------

    def score(self, message: str, items: Sequence[str],
              deadline: Deadline | None = None) -> list[float]:
        """For each item alone: calibrated probability (0..1) that it answers the message."""
        if not items:
            return []
        vectors = embed(list(items))
        _check(deadline)
        return self.score_vectors(self._vector(message), vectors, message, items)

    def score_vectors(self, message_vec: np.ndarray, item_vecs: np.ndarray, message: str,
                      items: Sequence[str]) -> list[float]:
        """score() for callers that hold the vectors already (cached note vectors from
        memsift.model.embed with the same MODEL_ID): item_vecs is (len(items), DIM), rows unit
        length; message_vec is (DIM,). Texts are still needed for the shared-word features."""
        if not len(items):
            return []
        heads = _heads(self.heads_file)
        message_vec = np.asarray(message_vec, np.float32)
        if "item_w1" in heads:
            context = self.context
            x = item_matrix(message, context, self._kinds_of(message), items, item_vecs,
                            message_vec,
                            self._vector(with_context(message, context)),
                            self._vector(context) if context else None,
                            (heads["pair_w"], heads["pair_b"]))
            first = _mlp(heads, x)
            if "stack_w" in heads:
                first = self._with_cross(heads, message, items, first)
            return [float(p) for p in first]
        cosines = np.asarray(item_vecs, dtype=np.float32) @ message_vec
        feats = np.vstack([pair_features(float(c), message, item)
                           for c, item in zip(cosines, items)])
        return [float(p) for p in _softmax(feats @ heads["pair_w"] + heads["pair_b"])[:, 1]]

    def _with_cross(self, heads, message: str, items: Sequence[str], first: np.ndarray
                    ) -> np.ndarray:
        """The cross-encoder reads the message, the reply before it and each of the best few
        items together; its probability and the first head's are stacked (training/judge.py).
        The other items stay below the lowest of those few."""
        need = self.needs_memory(message)
        if _stack(heads, first.max(), CROSS_CEILING, need) < self.threshold():
            return first  # even a near-certain cross-encoder could not lift the best one
        top = np.argsort(-first, kind="stable")[: int(heads["cross_top"])]
        second = _encoder(CROSS_FILE).score(message, self.reply, [items[i] for i in top])
        relative = group_relative(first[top], second) if reads_relative(heads) else None
        on = _stack(heads, first[top], second, need, relative)
        final = np.minimum(first, on.min())
        final[top] = on
        return final

    @property
    def scores_read_the_kind(self) -> bool:
        """The context heads' item scores take the message's kind probabilities as inputs, and
        their threshold was chosen that way: the cascade adds no margin of its own for a
        doubtful kind (it would count the doubt twice: "which port does the staging database
        listen on?" reads as a third general knowledge, and its note sank under the margin)."""
        return "item_w1" in _heads(self.heads_file)

    @property
    def worth_gates_search(self) -> bool:
        """Whether the cascade should skip the long-term search for a subject this judge
        finds not worth keeping. The context heads were tuned without that gate: on the
        corpus's validation projects it cost 30 of 206 reminders found for 2 fewer additions
        for nothing (memsift/training/judge.py reports both)."""
        return "item_w1" not in _heads(self.heads_file)

    def threshold(self) -> float:
        """The score at or above which an item counts as answering (chosen on data)."""
        heads = _heads(self.heads_file)
        if "item_threshold" in heads:
            return float(heads["item_threshold"])
        return float(heads.get("score_threshold", SCORE_THRESHOLD))

    def passage_share(self) -> float | None:
        """The share of the headroom above the threshold a long-term passage needs on top
        (memsift.prompt.policy.above), chosen with the threshold on data; None for heads
        trained before it was (the cascade's PASSAGE_EXTRA_SHARE then)."""
        heads = _heads(self.heads_file)
        return float(heads["item_passage_share"]) if "item_passage_share" in heads else None

    def embed_message(self, message: str) -> np.ndarray:
        """The message's vector (cached per process), for use with score_vectors()."""
        return self._vector(message)

    # -- worth keeping -------------------------------------------------------------------

    def worth_keeping(self, text: str, deadline: Deadline | None = None) -> float:
        """Probability that the subject is a choice, constraint, problem or procedure."""
        x = np.concatenate([self._vector(text) * EMBED_SCALE, worth_features(text)])
        _check(deadline)
        heads = _heads(self.heads_file)
        return float(_softmax(x @ heads["worth_w"] + heads["worth_b"])[1])

    # -- generic question ----------------------------------------------------------------

    def choose(self, question: str, options: Sequence[str], context: str,
               deadline: Deadline | None = None) -> dict[str, float]:
        """Fallback for questions without a specialised head: softmax of the similarity of
        "question + context" to each option's text. The prompt path's fixed questions use
        kind(), score() and worth_keeping() instead, which are trained."""
        if not options:
            raise JudgeError("choose() needs at least one option")
        vectors = embed([f"{question}\n{context}", *options])
        _check(deadline)
        sims = vectors[1:] @ vectors[0]
        probs = _softmax(sims / CHOOSE_TEMPERATURE)
        return {option: float(p) for option, p in zip(options, probs)}

    def _vector(self, text: str) -> np.ndarray:
        cached = self._vectors.get(text)
        if cached is None:
            cached = self._vectors[text] = embed([text])[0]
            if len(self._vectors) > VECTOR_CACHE:
                self._vectors.popitem(last=False)
        return cached


def embed(texts: Sequence[str]) -> np.ndarray:
    """The embedding model, its failures turned into JudgeError (callers add nothing)."""
    try:
        return _embed_model(texts)
    except EmbedError as exc:
        raise JudgeError(str(exc)) from exc


def _check(deadline: Deadline | None) -> None:
    if deadline is not None and deadline.expired():
        raise JudgeError("the local judge ran past its deadline")


def _mlp(heads: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The item head: standardise, one ReLU layer, a logistic output (training/judge.py)."""
    h = np.maximum(((x - heads["item_mean"]) / heads["item_std"]) @ heads["item_w1"]
                   + heads["item_b1"], 0.0)
    return 1.0 / (1.0 + np.exp(-(h @ heads["item_w2"] + heads["item_b2"])[:, 0]))


def stack_inputs(first, second, need=None, relative=None) -> np.ndarray:
    """The stack's inputs from the first head's and the cross-encoder's probabilities, in the
    last axis: both logits and their scaled product, then the logit of the kind encoder's
    need for memory when there is one, then each logit less the best of its group
    (group_relative) when the stack reads those (training/judge.py fits on the same)."""
    a, b = np.broadcast_arrays(_logit(np.asarray(first)), _logit(np.asarray(second)))
    columns = [a, b, a * b / 10.0]
    if need is not None:
        columns.append(np.broadcast_to(_logit(np.asarray(need)), a.shape))
    if relative is not None:
        columns += [np.broadcast_to(np.asarray(r, a.dtype), a.shape) for r in relative]
    return np.stack(columns, axis=-1)


def group_relative(first, second) -> tuple[np.ndarray, np.ndarray]:
    """For the candidates of one group that the cross-encoder read: each one's logit, by
    either head, less the best in the group (0 for the best, below 0 for the others). An
    answer is usually its group's best by some way, a near miss one of several alike."""
    a, b = _logit(np.asarray(first)), _logit(np.asarray(second))
    return a - a.max(), b - b.max()


def reads_relative(heads) -> bool:
    return "stack_relative" in heads and bool(heads["stack_relative"])


def _stack(heads, first, second, need=None, relative=None):
    """The stacked probability of the first head's and the cross-encoder's (and the need's,
    and the logits relative to the group's best, for a stack fitted with them). With the
    shipped weights it rises with each probability over the whole clipped range, and falls
    as an item trails its group's best (tests check both): so the best item with a
    near-certain cross-encoder bounds the group, which is what lets the cross-encoder be
    skipped when it could not matter. `relative` None: the group's best (zeros)."""
    if not reads_relative(heads):
        relative = None
    elif relative is None:
        relative = (0.0, 0.0)
    if len(heads["stack_w"]) - (2 if relative is not None else 0) == 3:
        need = None
    elif need is None:
        raise JudgeError("this stack reads the kind encoder's need for memory")
    z = stack_inputs(first, second, need, relative) @ heads["stack_w"] + heads["stack_b"]
    return 1.0 / (1.0 + np.exp(-z))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def _encoder(path: Path):
    """A cross-encoder's weights (model/cross.py), loaded once per process."""
    from memsift.model.cross import CrossError, load

    try:
        return load(path)
    except (CrossError, EmbedError) as exc:
        raise JudgeError(str(exc)) from exc


def _kind_probs(outputs: np.ndarray) -> dict[str, float]:
    probs = _softmax(np.asarray(outputs[:len(KINDS)], np.float64))
    return {kind: float(p) for kind, p in zip(KINDS, probs)}


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@lru_cache(maxsize=4)
def _heads(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise JudgeError(f"the local judge's heads are missing or damaged: {exc}") from exc
