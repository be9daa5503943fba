"""Cheap text features the local judge adds to the MiniLM embedding.

The embedding knows the subject of a message; these cues carry what it blurs: "again", "last
time", "why did we", a question mark, a bare "ok". Shared by training (train_kinds.py) and the
run-time judge, so both see exactly the same numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from memsift.model.lexical import content_words

# (name, pattern) pairs; each gives a 0/1 feature for the kind head.
KIND_CUES: tuple[tuple[str, str], ...] = (
    ("again", r"\b(again|back again|is back|came back|keeps? (happening|failing)|once more|still the same|same (error|issue|problem))\b"),
    ("last_time", r"\b(last (time|week|session|chat)|the other day|previous(ly)?|earlier (this|session|chat|conversation)|yesterday|a while ago|before)\b"),
    ("you_said", r"\b(you (said|told|gave|wrote|suggested|mentioned|explained|recommended|proposed|showed|found|had|listed|computed|reviewed|helped)|remember|recall)\b"),
    ("we_decided", r"\b(we (decided|agreed|settled|chose|picked|went with)|did we (decide|agree|settle|choose|pick|ever)|our (rule|convention|policy|reason)|the (policy|convention|rule|decision) on)\b"),
    ("why_did_we", r"\bwhy (did|do|are|is|was|were) (we|our|the)\b|\bremind me\b|\breason\b|\brationale\b"),
    ("resume", r"\b(continue|continuing|pick(ing)? (up|back)|back to|back on|where (was i|were we|did (i|we))|left off|resume|carry on|keep going|finish|wrap up|what'?s (left|next)|where are we|back up|go(ing)? on|next steps?|(status|state) of|get .* (done|finished)|let'?s (get|finish|go))\b"),
    ("should_we", r"\b(should (we|i|the)|do we (want|need|go|keep|support|allow|store|block|buy|put)|or\b.*\?|which .* should|let'?s decide|we (need|have) to (pick|choose))"),
    ("like_existing", r"\b(like the (existing|other|one)|same (way|style|layout|pattern)|the way we|following (our|the)|our (existing|usual|standard|shared)|existing|reuse|next to|alongside|similar to|another|new (endpoint|screen|tab|command|stage))\b"),
    ("you_just", r"\b(you (just|made|wrote|added|used|ran|pick|did|change|mean|listed|got|put|created|hit)|your (last|answer|change|fix|code|output|analysis|suggestion)|above|so far|this session|just now|a minute ago|at the start|those|the list|the (diff|output|plan|snippet|regex|steps))\b"),
    ("action_verb", r"^(ok |now |pls |please |then )?(commit|push|run|rerun|merge|deploy|ship|tag|publish|rebuild|restart|amend|squash|flash|trigger|upload|apply|kubectl|helm|git|cargo|npm|make|retrain|execute|recompile|try|stage|create the pr|open a pr|kick off|build)\b"),
    ("imperative", r"^(add|write|make|change|use|set|create|rename|replace|remove|delete|convert|move|split|wrap|pin|cap|generate|translate|log|increase|sort|rewrite|expose|extend|hook|wire|plug|build|reuse|fix)\b"),
    ("about_project", r"\b(we|our|us)\b"),
    ("question_word", r"^(what|how|why|is|are|can|does|do|when|which|where|who|whats|explain|difference)\b"),
    ("general_q", r"\b(what('?s| is| are| does) (a|an|the difference|the best|the typical|the time)|how (do|does|is|are) (i|you|a|an)\b|explain|in simple terms|difference between)"),
)
_KIND_RES = tuple(re.compile(pattern) for _, pattern in KIND_CUES)

_IDENT = re.compile(r"[_./\-]|\d|[a-z][A-Z]")

EMBED_SCALE = 3.0  # embedding entries are ~0.05; chosen by 4-fold CV on the training rows


def kind_features(text: str) -> np.ndarray:
    """0/1 cue features plus a question mark and two length features."""
    lowered = text.strip().lower()
    words = len(lowered.split())
    cues = [1.0 if rx.search(lowered) else 0.0 for rx in _KIND_RES]
    extra = [1.0 if "?" in lowered else 0.0, math.log1p(words) / 3.0, 1.0 if words <= 3 else 0.0]
    return np.asarray(cues + extra, dtype=np.float32)


def identifiers(text: str) -> set[str]:
    """Tokens that look like code names: snake_case, dotted, paths, versions, camelCase."""
    return {t.lower() for t in re.findall(r"\S+", text) if _IDENT.search(t.strip(".,;:!?()'\"`"))}


# No item-length feature: on the hand-written pairs it learned that answers are the longer
# notes (an artefact of how they were written) and sank short answering notes.
PAIR_FEATURES = ("cosine", "shared_words", "shared_identifiers", "cos_x_shared",
                 "why_gets_reason", "problem_gets_fix", "resume_gets_status")

# A query-type prior: the kind of question says what shape an answer has. A "why" is
# answered by a reason, a recurring problem by a cause or fix, resumed work by a status.
_ASKS_WHY = re.compile(r"\b(why|reason|rationale|decide|decided|agree|agreed|settle|chose|choose|pick)")
_GIVES_REASON = re.compile(r"\b(because|so that|since|chosen|chose|over|instead|decided|agreed|rule|to avoid)\b")
_ASKS_FIX = re.compile(r"\b(again|error|fails?|failing|broke|broken|crash\w*|hangs?|stuck|flaky|back)\b")
_GIVES_FIX = re.compile(r"\b(fix(ed)?|caused?|cause|workaround|solution|was the|because|check)\b")
_ASKS_STATUS = re.compile(r"\b(continue|where (was|were|are|did)|left|next|resume|back to|finish|status|pick up)\b")
_GIVES_STATUS = re.compile(r"\b(done|left|next|status|half|remaining|todo|started|finished|missing)\b")


def pair_features(cosine: float, message: str, item: str) -> np.ndarray:
    """Features of one (message, item) pair; `cosine` comes from the embeddings."""
    mine = content_words(message)
    shared = len(mine & content_words(item)) / max(1, len(mine))
    ids = identifiers(message) & identifiers(item)
    asked, given = message.lower(), item.lower()
    prior = [float(bool(ask.search(asked) and give.search(given)))
             for ask, give in ((_ASKS_WHY, _GIVES_REASON), (_ASKS_FIX, _GIVES_FIX),
                               (_ASKS_STATUS, _GIVES_STATUS))]
    return np.asarray([cosine, shared, min(len(ids), 3) / 3.0, cosine * shared, *prior],
                      dtype=np.float32)


WORTH_CUES = (
    r"\b(because|since|so that|to avoid|otherwise)\b",
    r"\b(decid|agreed|chose|picked|settled|went with|we use|use .* (instead|not|for)|instead of|over)\w*",
    r"\b(never|always|must|only|don'?t|do not|from now on|every|required?)\b",
    r"\b(fix(ed)?|caused by|was the|root cause|workaround|fails? when|broke)\b",
    r"\b(to (release|deploy|restore|regenerate|run)|procedure|steps?|then|first)\b",
)
_WORTH_RES = tuple(re.compile(p) for p in WORTH_CUES)


def worth_features(text: str) -> np.ndarray:
    lowered = text.strip().lower()
    cues = [1.0 if rx.search(lowered) else 0.0 for rx in _WORTH_RES]
    return np.asarray(cues + [math.log1p(len(lowered.split())) / 3.0], dtype=np.float32)


# --- the message in its context (the corpus-trained heads) ---------------------------------

CONTEXT_CHARS = 400  # the turn before, as embedded: ~100 tokens; at 1,200 (256 tokens) its two
#                      embeddings cost a search prompt ~0.1 s more for the same validation
#                      numbers (197 found, 25 for nothing, against 197 and 26 at 400)
CONTEXT_SCALE = 0.5  # the turn before weighs half the message in the kind head


def context_of(turns: Sequence[tuple[str, str]]) -> str:
    """The exchange before the message, as the judge reads it: the last user message and the
    agent's reply to it. `turns` are (role, text), oldest first, the message itself excluded."""
    assistant = user = ""
    for role, text in reversed(turns):
        if role == "assistant" and not assistant and not user:
            assistant = text
        elif role == "user":
            user = text
            break
    if not (user or assistant):
        return ""
    return f"{user}\n{assistant}".strip()[:CONTEXT_CHARS]


def with_context(message: str, context: str) -> str:
    """The text whose embedding is "the message as the conversation means it"."""
    return f"{message}\n{context}" if context else message


def kind_context_features(message: str, message_vec: np.ndarray,
                          context_vec: np.ndarray | None) -> np.ndarray:
    """The kind head's input: the message, the turn before (zeros when there is none) and
    the cue features."""
    has = context_vec is not None
    ctx = context_vec if has else np.zeros_like(message_vec)
    return np.concatenate([message_vec * EMBED_SCALE, ctx * EMBED_SCALE * CONTEXT_SCALE,
                           kind_features(message), [1.0 if has else 0.0]]).astype(np.float32)


ITEM_BASE_FEATURES = ("cos_message", "cos_with_context", "cos_context", "bm25_message",
                      "bm25_context", "rank_message", "rank_with_context", "gap_message",
                      "gap_with_context", "has_context", "pair_head")


def item_matrix(message: str, context: str, kind_probs: np.ndarray, texts: Sequence[str],
                vectors: np.ndarray, message_vec: np.ndarray,
                with_context_vec: np.ndarray, context_vec: np.ndarray | None,
                pair_head: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """One row per candidate item of one group (the nearest notes, or the passages the search
    returned): how it relates to the message, to the message read with the turn before, and
    to the other candidates of its group (rank, gap to the best), the pair cues and the
    message's kind probabilities, and the hand-fitted pair head's own probability (trained on
    short hand-written notes, where the corpus's passages are long: without it a short note
    that answers sank under a long one on the same subject). No length feature: it learned
    that answers are the longer texts. (Elementwise products of the vectors, 768 more columns,
    let the head memorise its training sessions: validation AUC against same-subject items
    fell from 0.83 to 0.79 with them.)"""
    from memsift.model.lexical import bm25

    n = len(texts)
    vectors = np.asarray(vectors, np.float32)
    ctx_vec = context_vec if context_vec is not None else np.zeros_like(message_vec)
    cos_m, cos_mc, cos_c = vectors @ message_vec, vectors @ with_context_vec, vectors @ ctx_vec
    bm_m = bm25(message, texts)
    bm_c = bm25(context, texts) if context else np.zeros(n, np.float32)
    rank_m = 1.0 / (1.0 + np.argsort(np.argsort(-cos_m)))
    rank_mc = 1.0 / (1.0 + np.argsort(np.argsort(-cos_mc)))
    base = np.stack([
        cos_m, cos_mc, cos_c, bm_m / (bm_m.max() + 1e-6), bm_c / (bm_c.max() + 1e-6),
        rank_m, rank_mc, cos_m.max() - cos_m, cos_mc.max() - cos_mc,
        np.full(n, 1.0 if context else 0.0),
    ], axis=1)
    cues = np.vstack([pair_features(float(c), message, t) for c, t in zip(cos_m, texts)])
    logits = cues @ pair_head[0] + pair_head[1]
    old = 1.0 / (1.0 + np.exp(logits[:, 0] - logits[:, 1]))
    kinds = np.repeat(np.asarray(kind_probs, np.float32)[None, :], n, axis=0)
    return np.hstack([base, old[:, None], cues, kinds]).astype(np.float32)
