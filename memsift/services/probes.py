"""Probes of the outside services, off the prompt path: one request each that tells whether a
paused service answers again, and the detached process that runs them (`python -m
memsift.services.health probe <service>`), so a hook never waits for one."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

PROBE_TIMEOUT_S = 5.0  # off the prompt path; a hung server must not keep probes alive long


class HealthError(Exception):
    """A probe found the service still down; `reason` is one of PAUSING_REASONS or 'error'."""

    def __init__(self, message: str, *, reason: str = "error") -> None:
        super().__init__(message)
        self.reason = reason


def reason_of_status(status: int) -> str | None:
    if status in (401, 403):
        return "auth"
    if status >= 500:
        return "server"
    return None


def short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_line(level: str, message: str, **fields: object) -> None:
    from memsift.log import log

    log(level, message, **fields)


def probe_timeout(service: str, settings) -> float:
    """A probe waits no longer than the prompt path would: a slower answer is still down."""
    key = {"longterm": "cognee.timeout_s", "llm": "llm.timeout_s",
           "decisions": "judge.timeout_s"}[service]
    return min(PROBE_TIMEOUT_S, float(settings.get(key, PROBE_TIMEOUT_S)))


# -- probes: one per service, off the prompt path ------------------------------------------

def probe_longterm(settings, timeout: float, transport=None) -> None:
    """Cognee answers when `GET /health` and a tiny recall both come back; the embedded
    store is a file beside us and has no outage to probe."""
    url = str(settings["cognee.url"]).rstrip("/")
    if not url:
        return
    headers = {"X-Api-Key": settings["cognee.api_key"]} if settings["cognee.api_key"] else {}
    with _client(url, timeout, transport, headers) as client:
        _checked(client, "GET", "/health")
        body = {"query": "memsift health probe", "search_type": "CHUNKS", "top_k": 1}
        _checked(client, "POST", "/api/v1/recall", json=body, ok_also=(404,))


def probe_llm(settings, timeout: float, transport=None) -> None:
    """The endpoint answers when a one-token chat completion with the configured model does
    (GET /models can answer while completions hang or are refused for the key)."""
    url = str(settings["llm.base_url"]).rstrip("/")
    if not url:
        return
    key = settings["llm.api_key"] or os.environ.get("OPENAI_API_KEY", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"model": settings["llm.model"] or "default", "max_tokens": 1,
            "messages": [{"role": "user", "content": "ping"}]}
    with _client(url, timeout, transport, headers) as client:
        _checked(client, "POST", "/chat/completions", json=body)


def probe_decisions(settings, timeout: float, transport=None) -> None:
    """The typed decision API answers when one yes/no question does, through the same
    request memsift sends on the prompt path. A request the server rejects (400/422) was
    still answered: the server is up."""
    from memsift.config import DECISION_BACKENDS, judge_backend
    from memsift.judge import decision_judge
    from memsift.judge.base import JudgeError

    backend = judge_backend(settings)
    if backend not in DECISION_BACKENDS:
        return
    try:
        with decision_judge(settings, backend, transport=transport) as judge:
            judge.timeout_s = timeout
            judge.worth_keeping("memsift health probe")
    except JudgeError as exc:
        if exc.reason != "rejected":
            raise HealthError(f"{backend}: {exc}", reason=exc.reason) from exc


PROBES: dict[str, Callable[..., None]] = {"longterm": probe_longterm, "llm": probe_llm,
                                          "decisions": probe_decisions}


def _client(url: str, timeout: float, transport, headers: Mapping[str, str]):
    import httpx

    return httpx.Client(base_url=url, timeout=httpx.Timeout(timeout), transport=transport,
                        headers=dict(headers))


def _checked(client, method: str, path: str, ok_also: Iterable[int] = (), **kwargs: Any) -> None:
    """One request; any failure becomes a HealthError with its reason."""
    import httpx

    try:
        response = client.request(method, path, **kwargs)
    except httpx.TimeoutException as exc:
        raise HealthError(f"{method} {path}: no answer in time", reason="timeout") from exc
    except httpx.ConnectError as exc:
        raise HealthError(f"{method} {path}: {exc}", reason="refused") from exc
    except httpx.HTTPError as exc:
        raise HealthError(f"{method} {path}: {exc}", reason="error") from exc
    if response.status_code < 400 or response.status_code in set(ok_also):
        return
    reason = reason_of_status(response.status_code) or "error"
    raise HealthError(f"{method} {path}: HTTP {response.status_code}", reason=reason)


_SPAWNED: list[int] = []  # probes started by this process, reaped on the next start


def spawn_detached_probe(service: str) -> None:
    """Start `python -m memsift.services.health probe <service>` in its own session with stdio on
    /dev/null: the hook returns at once (the host waits for our stdout to close, not for the
    probe) and the probe outlives it."""
    _reap()
    devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, flags, 0)
               for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY))]
    argv = [sys.executable, "-m", "memsift.services.health", "probe", service]
    _SPAWNED.append(os.posix_spawn(sys.executable, argv, os.environ, setsid=True,
                                   file_actions=devnull))


def _reap() -> None:
    """Collect probes that have finished, so a long-lived caller keeps no zombies."""
    for pid in list(_SPAWNED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _SPAWNED.remove(pid)


