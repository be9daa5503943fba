"""The decision model: small questions with fixed answers, never prose.

`get_judge(settings)` returns the configured backend (config.judge_backend): the offline local
model by default, System One or OpenAI Decisions (the typed decision APIs), or chat completions
on an OpenAI-compatible endpoint (`llm.base_url`). Callers only see the Judge protocol.
"""

from __future__ import annotations

from memsift.judge.base import (
    KINDS,
    NO_SEARCH_KINDS,
    SEARCH_KINDS,
    Judge,
    JudgeError,
)

__all__ = ["KINDS", "NO_SEARCH_KINDS", "SEARCH_KINDS", "Judge", "JudgeError", "get_judge"]


def get_judge(settings, *, transport=None) -> Judge:
    from memsift.config import DECISION_BACKENDS, judge_backend

    backend = judge_backend(settings)
    if backend in DECISION_BACKENDS:
        return decision_judge(settings, backend, transport=transport)
    if backend == "chat":
        from memsift.judge.openai_compat import OpenAICompatJudge

        return OpenAICompatJudge.from_settings(settings, transport=transport)
    from memsift.judge.local import LocalJudge

    return LocalJudge.from_settings(settings)


def decision_judge(settings, backend: str, *, transport=None):
    """A System One or OpenAI Decisions judge from the judge.* settings, each base_url in its
    official client's convention, keys from the environment when memsift has none."""
    if backend == "systemone":
        from memsift.judge import systemone as wire
        from memsift.judge.systemone import SystemOneJudge as judge_class

        base = settings["judge.base_url"] or wire.DEFAULT_BASE_URL
        model = settings["judge.model"] or wire.default_model(base)
        key = settings["judge.api_key"] or wire.api_key(base)
    else:
        from memsift.judge import openai_decisions as wire
        from memsift.judge.openai_decisions import OpenAIDecisionsJudge as judge_class

        base = settings["judge.base_url"] or wire.DEFAULT_BASE_URL
        model = settings["judge.model"] or wire.DEFAULT_MODEL
        key = settings["judge.api_key"] or wire.api_key()
    threshold = float(settings["judge.threshold"])
    price = float(settings["judge.price_per_mtok"])
    return judge_class(base, model, key, float(settings["judge.timeout_s"]),
                       threshold=threshold if threshold >= 0 else None,
                       price_per_mtok=price if price >= 0 else None, transport=transport)
