"""The decision model on System One: `POST {base}/v1/systemone` (TypeSafe's Jev, OpenRouter,
Fireworks, LiteLLM's proxy, llama.cpp's llama-server, laya-serve, self-hosted decision models).

The state is a JSON object (message, last turns, the item); questions are a map of name to
question: a choice whose criteria are the labels and their descriptions, a noul whose criteria
describe both outcomes. Answers come back under the same names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from memsift.judge.typed import Question, TypedJudge, probability

DEFAULT_BASE_URL = "https://api.typesafe.ai"  # without the version: memsift adds /v1/systemone
# A pinned version, not jev-latest: an alias that moves under us moves the thresholds too.
DEFAULT_MODEL = "jev-1.13.0"
OPENROUTER_MODEL = "typesafe/jev-1.13"  # the same model under OpenRouter's name
# Single-item scoring separated answers (0.88-0.92) from misses (<= 0.63) on the published
# design's sessions; Jev gives on-topic text high odds whatever it says, so the bar sits
# between the two, not at even odds.
THRESHOLD = 0.75
PRICE_PER_MTOK = 0.042  # USD per million input tokens (jev-1.13); output tokens are free
MAX_OPTIONS = 255  # a choice with 256 options is rejected


def default_model(base_url: str) -> str:
    return OPENROUTER_MODEL if "openrouter.ai" in base_url else DEFAULT_MODEL


def api_key(base_url: str, environ: Mapping[str, str] = os.environ) -> str:
    """The key the server's own client would read: OpenRouter's behind OpenRouter, else
    TypeSafe's (LiteLLM's passthrough reads that too)."""
    order = ("OPENROUTER_API_KEY", "TYPESAFE_API_KEY") if "openrouter.ai" in base_url \
        else ("TYPESAFE_API_KEY", "OPENROUTER_API_KEY")
    return next((environ[name] for name in order if environ.get(name)), "")


class SystemOneJudge(TypedJudge):
    name = "systemone"
    path = "v1/systemone"  # relative: the base keeps its own prefix (/api on OpenRouter)
    request_id_header = "x-typesafe-request-id"
    default_threshold = THRESHOLD
    price_per_mtok = PRICE_PER_MTOK

    def request(self, state: dict[str, Any], questions: Sequence[Question]) -> dict[str, Any]:
        return {"model": self.model, "state": state,
                "questions": {q.name: _question(q) for q in questions}}

    def answers(self, data: Mapping[str, Any], questions: Sequence[Question]) -> dict[str, Any]:
        given = data["answers"]
        out: dict[str, Any] = {}
        for q in questions:
            answer = given[q.name]
            if q.is_choice:
                probs = answer["probabilities"]
                out[q.name] = {label: probability(probs.get(label, 0.0)) for label in q.options}
            else:
                out[q.name] = probability(answer["noul"])
        return out


def _question(q: Question) -> dict[str, Any]:
    if q.is_choice:
        if not 1 <= len(q.options) <= MAX_OPTIONS:
            raise ValueError(f"a choice takes 1 to {MAX_OPTIONS} options, not {len(q.options)}")
        return {"type": "choice", "instructions": q.instructions, "criteria": dict(q.options)}
    criteria = {k: v for k, v in (("true", q.true), ("false", q.false)) if v}
    question: dict[str, Any] = {"type": "noul", "instructions": q.instructions}
    if criteria:
        question["criteria"] = criteria
    return question
