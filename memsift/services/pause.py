"""What a pause of an outside service is: the services and their words for the agent, a Pause
as the health state file (memsift.services.health) holds it and the line it is told as, and
the reason a failure carries (classify): the reasons that mean an outage pause the service,
the rest are one question going wrong."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memsift.clock import parse_time
from memsift.services.probes import reason_of_status

SERVICES = ("longterm", "llm", "decisions")
LABELS = {"longterm": "long-term memory", "llm": "the LLM decision model",
          "decisions": "the remote decision model (System One / OpenAI Decisions)"}
FALLBACKS = {"longterm": "work goes on with the local notes",
             "llm": "work goes on with the local decision model",
             "decisions": "work goes on with the local decision model"}

# Reasons that mean "the service is not there for us now": pause it. Others (a bad reply)
# are the answer to one question going wrong, not an outage.
PAUSING_REASONS = {"refused", "timeout", "server", "auth", "slow", "rate_limited", "overloaded"}
REASON_TEXT = {
    "rate_limited": "rate limited (429)",
    "overloaded": "the server is overloaded (529)",
    "rejected": "the server rejected a request",
    "refused": "connection refused",
    "timeout": "no answer in time",
    "server": "server error",
    "auth": "not authorised (check the API key)",
    "slow": "answers too slowly",
    "user": "paused by the user",
}


@dataclass(frozen=True)
class Pause:
    """One current pause of a service, as read from the state file."""

    service: str
    since: str
    reason: str
    detail: str = ""
    by: str = "fault"  # fault | user
    until: str = ""  # ISO time a user pause expires; "" for none
    outage: str = ""  # id of the outage, to remember which sessions were told

    @classmethod
    def from_dict(cls, service: str, data: Mapping[str, Any]) -> Pause:
        return cls(service, str(data.get("since", "")), str(data.get("reason", "error")),
                   str(data.get("detail", "")), str(data.get("by", "fault")),
                   str(data.get("until") or ""), str(data.get("outage", "")))

    def expired(self, at: datetime) -> bool:
        return bool(self.until) and parse_when(self.until) <= at

    def notice(self) -> str:
        """The words the agent reads, e.g. 'long-term memory paused since 14:02 UTC
        (connection refused)'."""
        since = parse_when(self.since).strftime("%H:%M UTC")
        why = REASON_TEXT.get(self.reason, self.reason)
        until = f" until {parse_when(self.until).strftime('%H:%M UTC')}" if self.until else ""
        return f"{LABELS.get(self.service, self.service)} paused since {since}{until} ({why})"


def parse_when(text: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError:
        return datetime.fromtimestamp(0).astimezone()


def classify(exc: BaseException) -> str:
    """The reason of a failure: refused | timeout | server | auth | error.

    Our own errors carry `.reason` (LongTermError, JudgeError); foreign ones are read here,
    at the boundary, without importing an HTTP library that is not already loaded."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str) and reason:
        return reason
    from memsift.clock import DeadlineExceeded

    if isinstance(exc, (DeadlineExceeded, TimeoutError)):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    status = getattr(exc, "status_code", status)
    if isinstance(status, int):
        return reason_of_status(status) or "error"
    httpx = sys.modules.get("httpx")
    if httpx is not None:
        if isinstance(exc, httpx.TimeoutException):
            return "timeout"
        if isinstance(exc, httpx.ConnectError):
            return "refused"
    return "error"
