"""A cascade's collaborators (cascade.py), built when a step first needs them: the judge (the
local one while the remote judge is paused, or once it failed a step: the hand-over), the
session's last turns it reads, its usage into the audit line and the daily ledger, the
long-term store, the embedding model and the message's vector, made once per prompt."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memsift.config import remote_judge

if TYPE_CHECKING:  # numpy loads only when a step needs vectors: a ruled message never does
    import numpy as np

Embedder = tuple[Callable[[Sequence[str]], "np.ndarray"], str]  # (embed function, model id)

JUDGE_TURNS = 4  # turns of the session the typed judge reads before the message
# Of the transcript, the end the last turns are in: a long session's file is megabytes of tool
# output, and parsing all of it would come before the kind question is even sent.
JUDGE_TAIL_BYTES = 256 * 1024


class Collaborators:
    """The judge, the store, the embedder and the message's vector of a cascade. The subclass
    sets `settings`, `root`, `event`, `decision`, `_judge`, `_store`, `_embedder`,
    `_query_vector`, `_vector_lock`, `_own_judge` and `_llm_fallback`, and gives `guard` and
    `_record` (StepRunner)."""

    def _judge_shares_model(self) -> bool:
        """Cached vectors are only comparable with the judge's when made by the same model."""
        from memsift.model.embed import MODEL_ID

        return self.embedder[1] == MODEL_ID and hasattr(self.judge, "embed_message")

    @property
    def judge(self):
        if self._judge is None:
            self._judge = self._make_judge()
        return self._judge

    def _make_judge(self):
        """The configured judge; the local one while the remote judge is paused."""
        if remote_judge(self.settings) and self.guard:
            service = self.guard.judge_service
            if not self.guard.allows(service):
                self._llm_fallback = True
                self._record("judge", 0.0, f"local: {service} paused")
                return self._local_judge()
        from memsift.judge import get_judge

        judge = get_judge(self.settings)
        if hasattr(judge, "set_turns"):
            judge.set_turns(self._last_turns())
        return judge

    def _local_judge(self):
        from memsift.judge.local import LocalJudge

        judge = LocalJudge.from_settings(self.settings)
        if hasattr(judge, "set_turns"):  # a judge that reads the message with its context
            judge.set_turns(self._last_turns())
        return judge

    def _hand_over(self, step: str, reason: str) -> bool:
        """After the remote judge failed a step, the local judge answers it and the rest of
        the prompt (the remote one's health records the failure)."""
        if not self._own_judge or self._llm_fallback or not remote_judge(self.settings):
            return False  # an injected judge, or the local one already answering
        self._remote_judge, self._judge = self._judge, self._local_judge()
        self._llm_fallback = True
        self._record("judge", 0.0, f"local: {step} failed ({reason})")
        return True

    def _last_turns(self) -> list[tuple[str, str]]:
        """The session's last turns before the message, for the typed judge's state."""
        from memsift.prompt.conversation import recent_turns
        from memsift.prompt.focus import focus

        try:
            from memsift.hosts import adapter_for

            turns = adapter_for(self.event.host).read_transcript(
                self.event.transcript_path, tail_bytes=JUDGE_TAIL_BYTES) \
                if self.event.transcript_path else []
        except Exception as exc:  # noqa: BLE001 - no turns is a state with the message alone
            self.decision.error("judge", f"transcript unreadable: {type(exc).__name__}")
            return []
        # An earlier paste is read as the current one is: the question around it.
        return [(t.role, focus(t.text) if t.role == "user" else t.text)
                for t in recent_turns(turns, self.full_prompt, JUDGE_TURNS)]

    def _judge_usage(self) -> None:
        """The remote judge's requests into the audit line and the daily usage ledger."""
        judge = getattr(self, "_remote_judge", None) or self._judge
        usage = getattr(judge, "usage", None)
        if usage is None or not usage.requests:
            return
        self.decision.judge = {"backend": judge.name, "model": judge.model,
                               "requests": usage.requests, "input_tokens": usage.input_tokens,
                               "output_tokens": usage.output_tokens,
                               "request_ids": list(usage.request_ids)}
        try:
            from memsift.judge.usage import record

            record(self.settings.paths.data_dir, judge, usage.requests, usage.input_tokens,
                   usage.output_tokens)
        except Exception as exc:  # noqa: BLE001 - a full disk loses a count, not the prompt
            from memsift.log import log

            log("warning", "judge usage not recorded", error=str(exc))

    @property
    def store(self):
        if self._store is None:
            from memsift.longterm import get_store

            self._store = get_store(self.settings, self.root)
        return self._store

    @property
    def embedder(self) -> Embedder:
        with self._vector_lock:
            if self._embedder is None:
                from memsift.model.vectors import default_embed

                self._embedder = default_embed()
            return self._embedder

    def query_vector(self) -> np.ndarray:
        """The message's vector, made once per prompt (by the judge when it shares the model:
        its kind question already made it)."""
        with self._vector_lock:
            if self._query_vector is None:
                import numpy as np

                if self._judge_shares_model():
                    vector = self.judge.embed_message(self.event.prompt)
                else:
                    vector = self.embedder[0]([self.event.prompt])[0]
                self._query_vector = np.asarray(vector, np.float32)
            return self._query_vector
