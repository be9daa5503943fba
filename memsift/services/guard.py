"""One prompt's use of the services' health inside the cascade (see health.py): which steps call
which service, whether it may be called now, and what a step's failure or slow answer says."""

from __future__ import annotations

from collections.abc import Callable

from memsift.fsutil import LockTimeout
from memsift.services.health import Health
from memsift.services.pause import PAUSING_REASONS, classify
from memsift.services.probes import log_line, short

# The prompt path's evidence. A call cut off with less time than this says nothing about the
# service (the prompt had spent its budget elsewhere); an answer that used this share of its
# time means the next prompt would wait as long: treated as an outage ("slow").
MIN_EVIDENCE_S = 0.2
SLOW_SHARE = 0.8
# Steps of the cascade that are one call to a service and nothing else: their timeouts and
# slow answers are the service's. The notes step also embeds locally: only errors the judge
# itself reports count there. JUDGE stands for the judge's service ("llm" or "decisions").
JUDGE = "judge"
PURE_STEPS = {"kind": JUDGE, "worth": JUDGE, "passages": JUDGE, "longterm": "longterm"}
MIXED_STEPS = {"notes": JUDGE}


class PromptGuard:
    """One prompt's use of Health inside the cascade: which steps call which service, whether
    that service may be called, and what a step's failure or slow answer says about it.

    `remote(service)` tells whether the service is really outside (a Cognee server, an LLM
    endpoint); the embedded store and the local judge have no outages to track."""

    def __init__(self, health: Health, remote: Callable[[str], bool],
                 judge_service: str = "llm") -> None:
        self.health = health
        self.remote = remote
        self.judge_service = judge_service
        self._allowed: dict[str, bool] = {}
        self.skipped: list[str] = []

    def service(self, step: str) -> str | None:
        service = PURE_STEPS.get(step) or MIXED_STEPS.get(step)
        if service == JUDGE:
            service = self.judge_service
        return service if service is not None and self.remote(service) else None

    def allows(self, service: str) -> bool:
        """Asked once per prompt and service (a file read), then remembered."""
        if service not in self._allowed:
            try:
                self._allowed[service] = self.health.guard(service)
            except (OSError, LockTimeout) as exc:  # a full disk: decide from the read alone
                log_line("warning", "health state not updated", service=service, error=str(exc))
                self._allowed[service] = not self.health.is_paused(service)
            if not self._allowed[service]:
                self.skipped.append(service)
        return self._allowed[service]

    def failed(self, step: str, exc: BaseException, budget_s: float) -> None:
        """A step failed: pause its service when the failure is the service's."""
        service = self.service(step)
        if service is None:
            return
        reason = classify(exc)
        from memsift.clock import DeadlineExceeded

        cut_off = isinstance(exc, (DeadlineExceeded, TimeoutError))
        if reason == "timeout" and (budget_s < MIN_EVIDENCE_S or (cut_off and step in MIXED_STEPS)):
            return
        until_s = getattr(exc, "retry_after_s", None)
        if self._report(service, reason, short(exc), until_s):
            self._allowed[service] = False  # the rest of this prompt goes on without it

    def answered(self, step: str, elapsed_s: float, budget_s: float) -> None:
        service = self.service(step)
        if service is None:
            return
        if step in PURE_STEPS and budget_s >= MIN_EVIDENCE_S and elapsed_s >= SLOW_SHARE * budget_s:
            detail = f"answered in {elapsed_s:.2f}s of {budget_s:.2f}s"
            if self._report(service, "slow", detail):
                self._allowed[service] = False
            return
        try:
            self.health.report_success(service)
        except (OSError, LockTimeout) as exc:  # the resume is written by a later prompt
            log_line("warning", "service resume not recorded", service=service, error=str(exc))

    def _report(self, service: str, reason: str, detail: str,
                until_s: float | None = None) -> bool:
        """Pause the service; on a full disk it is at least skipped for this prompt."""
        try:
            return self.health.report_failure(service, reason, detail, until_s)
        except (OSError, LockTimeout) as exc:
            log_line("warning", "service pause not recorded", service=service, error=str(exc))
            return reason in PAUSING_REASONS

    def notice(self, session_id: str) -> str:
        try:
            return self.health.notice_for_session(session_id)
        except (OSError, LockTimeout) as exc:  # a full disk: the notice waits for later
            log_line("warning", "outage notice not recorded", error=str(exc))
            return ""
