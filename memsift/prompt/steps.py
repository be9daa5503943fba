"""The cascade's step runner: each step inside min(its own budget, what the prompt has left), on
a worker thread so that a backend ignoring its deadline is still cut off; a failure ends that
step only, tells the services' health, and every step's time and result go to the audit line.

The cascade (cascade.py) says what the steps are and in which order; this says how one runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from memsift.audit import write_decision
from memsift.clock import Deadline, DeadlineExceeded

T = TypeVar("T")

JUDGE_STEPS = ("kind", "notes", "worth", "passages")  # the offline judge's: one budget for all


class StepRunner:
    """Deadlines, failures and the audit line for a cascade. The subclass sets `settings`,
    `event`, `clock`, `started`, `deadline`, `decision`, `_guard` and `_llm_fallback`, and
    says in `_hand_over` whether a failed judge step may be asked again of the local judge."""

    _pending = ""

    def _timed(self, name: str, seconds: float, work: Callable[[Deadline], T], *,
               quiet: bool = False, retry: bool = True) -> T | None:
        """Run one step inside min(its budget, what the prompt has left), on a worker thread
        so that a backend ignoring its deadline is still cut off. None when it failed; a judge
        step the remote judge failed is asked of the local judge in the time left."""
        from memsift.judge.base import JudgeError
        from memsift.longterm.base import LongTermError

        if name in JUDGE_STEPS and not self._judge_remote():
            seconds = self.deadline.remaining()
        deadline = self.deadline.sub(seconds)
        begin = self.clock()
        self._pending = ""
        guard = self.guard
        service = guard.service(name) if guard else None
        if service and not guard.allows(service):
            self._record(name, 0.0, f"skipped: {service} paused")
            return None
        try:
            if deadline.expired():
                raise DeadlineExceeded(f"no time left for {name}")
            result = _within(work, deadline)
        except (DeadlineExceeded, TimeoutError) as exc:
            self._tell_guard(name, exc, deadline)
            self._failed(name, begin, "timeout", "timeout")
            return self._locally(name, work, "timeout") if retry else None
        except LongTermError as exc:
            self._tell_guard(name, exc, deadline)
            return self._failed(name, begin, exc.reason, f"{exc.reason}: {exc}")
        except JudgeError as exc:
            self._tell_guard(name, exc, deadline)
            self._failed(name, begin, "error", f"judge: {exc}")
            return self._locally(name, work, exc.reason) if retry else None
        except Exception as exc:  # noqa: BLE001 - foreign failures end this step only
            return self._failed(name, begin, "error", f"{type(exc).__name__}: {exc}")
        if service:
            guard.answered(name, (self.clock() - begin), deadline.seconds)
        summary = self._pending or _summary(result)
        self._record(name, self._ms(begin), summary)
        return result

    def _locally(self, name: str, work: Callable[[Deadline], T], reason: str) -> T | None:
        """The failed judge step again, of the local judge, in what the prompt has left."""
        if name not in JUDGE_STEPS or not self._hand_over(name, reason):
            return None
        return self._timed(name, self.deadline.remaining(), work, retry=False)

    def _hand_over(self, step: str, reason: str) -> bool:
        return False  # the cascade says when the local judge takes over

    def _remote(self, service: str) -> bool:
        if service == "longterm":
            return bool(self.settings["cognee.url"])
        return self._judge_remote()

    def _judge_remote(self) -> bool:
        """Whether the judge steps wait on a remote judge (not once it handed over)."""
        from memsift.config import remote_judge

        return remote_judge(self.settings) and not self._llm_fallback

    def _tell_guard(self, name: str, exc: BaseException, deadline: Deadline) -> None:
        """Let health pause an outside service whose failure this was (never raises)."""
        try:
            if self.guard:
                self.guard.failed(name, exc, deadline.seconds)
        except Exception as error:  # noqa: BLE001 - health is advice, not the prompt
            self.decision.error("health", str(error))

    @property
    def guard(self):
        """Outage tracking, only when an outside service (Cognee, an LLM) is configured."""
        if self._guard is None:
            from memsift.config import remote_judge

            if not (self.settings["cognee.url"] or remote_judge(self.settings)):
                self._guard = False
            else:
                from memsift.services.guard import PromptGuard
                from memsift.services.health import Health, judge_service

                self._guard = PromptGuard(Health.for_settings(self.settings), self._remote,
                                          judge_service(self.settings))
        return self._guard or None

    def _failed(self, name: str, begin: float, result: str, reason: str) -> None:
        self._record(name, self._ms(begin), result)
        self.decision.error(name, reason)
        from memsift.log import log

        log("warning", f"{name} step failed, going on without it", reason=reason,
            session=self.event.session_id)

    def _record(self, name: str, ms: float, result: str) -> None:
        self.decision.step(name, ms, result)

    def _amend(self, name: str, result: str) -> None:
        """Replace the result of the step just recorded (its time stays)."""
        for step in reversed(self.decision.steps):
            if step.name == name:
                step.result = result
                return

    def _ms(self, begin: float) -> float:
        return (self.clock() - begin) * 1000.0

    def _write_audit(self) -> None:
        self.decision.wait_ms = self._ms(self.started)
        self._judge_usage()
        try:
            write_decision(self.decision, self.settings.paths.audit_file)
        except Exception as exc:  # noqa: BLE001 - a full disk must not break the prompt
            from memsift.log import log

            log("warning", "audit line not written", error=str(exc))

    def _judge_usage(self) -> None:
        """The remote judge's requests, tokens and ids into the audit line (the cascade)."""



def _summary(result) -> str:
    if isinstance(result, dict):
        return max(result, key=result.get) if result else "none"
    if isinstance(result, list):
        return f"{len(result)} found"
    if isinstance(result, float):
        return f"{result:.2f}"
    return str(result)


class Early:
    """Work started on a daemon thread before its step, taken by the step later: the step
    waits for what is left of it, within its own deadline, and gets its result or error."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._box: dict[str, object] = {}

        def target() -> None:
            try:
                self._box["result"] = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the step
                self._box["error"] = exc

        self._thread = threading.Thread(target=target, daemon=True)
        self._thread.start()

    def result(self, deadline: Deadline):
        self._thread.join(deadline.remaining())
        if self._thread.is_alive():
            raise DeadlineExceeded(f"over budget of {deadline.seconds:.3f}s")
        if "error" in self._box:
            raise self._box["error"]  # type: ignore[misc]
        return self._box["result"]


def _within(work: Callable[[Deadline], T], deadline: Deadline) -> T:
    """Run `work(deadline)` on a daemon thread; give up when the deadline passes (the thread
    is abandoned, and dies with the hook process)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = work(deadline)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(deadline.remaining())
    if thread.is_alive():
        raise DeadlineExceeded(f"over budget of {deadline.seconds:.3f}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]
