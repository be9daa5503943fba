"""The decision model: small questions with fixed answers, never prose.

`get_judge(settings)` returns the configured backend: the offline local model by default, an
OpenAI-compatible endpoint when `llm.base_url` is set. Callers only see the Judge protocol.
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


def get_judge(settings) -> Judge:
    if settings["llm.base_url"]:
        from memsift.judge.openai_compat import OpenAICompatJudge

        return OpenAICompatJudge.from_settings(settings)
    from memsift.judge.local import LocalJudge

    return LocalJudge.from_settings(settings)
