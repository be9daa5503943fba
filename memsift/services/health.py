"""Outages and pauses of the outside services: the long-term store, the chat LLM endpoint and
the remote decision model on a typed decision API (System One, OpenAI Decisions).

A failure on the prompt path (refused, timeout, 5xx, auth) pauses the service with its reason
and time in a small state file (`health.json` in the data folder). While it is paused the
prompt path skips it at the cost of one small file read and goes on with what works (local
notes, the local decision model). A probe off the prompt path (a detached process, at most
once per `health.probe_every_s`) resumes the service when it answers again. The user pauses
and resumes services the same way (`memsift pause`, `memsift resume`), with an optional expiry.

The API the cascade calls:

    health = Health.for_settings(settings)
    if health.guard("longterm"):          # False while paused: skip the call, costs nothing
        try:
            passages = store.search(...)
        except LongTermError as exc:
            health.report_failure("longterm", exc)   # pauses it (refused/timeout/5xx/auth)
        else:
            health.report_success("longterm")        # cheap; resumes a stale fault pause
    line = health.notice_for_session(event.session_id)  # "" or one line for the prompt

Writes happen only on a change (a failure, a pause, a resume, a notice given), under a lock,
atomically: many hook processes can share the file. Ended outages go to `outages.jsonl`.
What a pause is and which failures pause a service: memsift.services.pause.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memsift.clock import now
from memsift.fsutil import LockTimeout, append_line, atomic_write, file_lock
from memsift.services.pause import (
    FALLBACKS,
    PAUSING_REASONS,
    SERVICES,
    Pause,
    classify,
    parse_when,
)
from memsift.services.probes import (
    PROBES,
    HealthError,
    log_line,
    probe_timeout,
    short,
    spawn_detached_probe,
)

FLAP_WINDOW_S = 600.0  # an outage starting this soon after the last one ended is a flap
MAX_PROBE_EVERY_S = 600.0  # a flapping service is probed less often, but at least this often
MAX_TOLD = 500  # sessions remembered per outage; older ones may be told twice, never lost
STATE_VERSION = 1


class Health:
    """The health state of the services, kept in `<data_dir>/health.json`."""

    def __init__(self, data_dir: Path, *, probe_every_s: float = 30.0,
                 clock: Callable[[], datetime] = now,
                 spawn_probe: Callable[[str], None] | None = None) -> None:
        self.path = data_dir / "health.json"
        self.lock_path = data_dir / "health.json.lock"
        self.history_path = data_dir / "outages.jsonl"
        self.probe_every_s = probe_every_s
        self.clock = clock
        self.spawn_probe = spawn_probe if spawn_probe is not None else spawn_detached_probe

    @classmethod
    def for_settings(cls, settings, **kwargs: Any) -> Health:
        every = float(settings.get("health.probe_every_s", 30.0))
        return cls(settings.paths.data_dir, probe_every_s=every, **kwargs)

    # -- reading (cheap: one small file, no lock) ----------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except (FileNotFoundError, ValueError, OSError):
            return {}  # a corrupt state file means "nothing paused": never block the prompt
        return data if isinstance(data, dict) else {}

    def _entries(self, state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        services = state.get("services")
        return {k: v for k, v in services.items() if isinstance(v, dict)} \
            if isinstance(services, dict) else {}

    def pause_of(self, service: str) -> Pause | None:
        """The current pause of a service, or None (an expired user pause is none)."""
        entry = self._entries(self._read()).get(service)
        if entry is None:
            return None
        pause = Pause.from_dict(service, entry)
        return None if pause.expired(self.clock()) else pause

    def is_paused(self, service: str) -> bool:
        return self.pause_of(service) is not None

    def pauses(self) -> list[Pause]:
        at = self.clock()
        found = [Pause.from_dict(s, e) for s, e in self._entries(self._read()).items()]
        return [p for p in found if not p.expired(at)]

    # -- the prompt path -----------------------------------------------------------------
    def guard(self, service: str) -> bool:
        """True when the prompt path may call the service. While it is paused by a fault,
        start a detached probe when one is due (rate-limited), and say False."""
        state = self._read()
        entry = self._entries(state).get(service)
        if entry is None:
            return True
        pause = Pause.from_dict(service, entry)
        if pause.expired(self.clock()):
            self._end(service, by="expiry")
            return True
        if pause.by == "fault" and self._probe_due(entry, state):
            try:
                if self._claim_probe(service):
                    self.spawn_probe(service)
            except (OSError, LockTimeout) as exc:  # a full disk, process limits: next time
                log_line("warning", "health probe not started", service=service, error=str(exc))
        return False

    def report_failure(self, service: str, exc: BaseException | str, detail: str = "",
                       until_s: float | None = None) -> bool:
        """Record a failure; pause the service when the reason is an outage. Returns whether
        the service is paused now. `until_s` (a server's Retry-After) ends the pause by
        itself after that long, with no probe."""
        reason = exc if isinstance(exc, str) else classify(exc)
        detail = detail or ("" if isinstance(exc, str) else short(exc))
        if until_s is None and not isinstance(exc, str):
            until_s = getattr(exc, "retry_after_s", None)
        if reason not in PAUSING_REASONS:
            return self.is_paused(service)
        if self.is_paused(service):
            return True  # another prompt saw it first
        until = (self.clock() + timedelta(seconds=until_s)).isoformat(timespec="seconds") \
            if until_s else ""
        return self._start(service, reason, detail, by="fault", until=until)

    def report_success(self, service: str) -> None:
        """The service answered on the prompt path: end a fault pause it still carries
        (a probe in another process may not have run yet). A read, no write, when healthy."""
        pause = self.pause_of(service)
        if pause is not None and pause.by == "fault":
            self._end(service, by="answer")

    def notice_for_session(self, session_id: str) -> str:
        """One line for the prompt about outages this session was not told of yet, or ""."""
        untold = [p for p in self.pauses() if session_id not in self._told(p.service)]
        if not untold:
            return ""
        with file_lock(self.lock_path):
            state = self._read()
            entries = self._entries(state)
            for pause in untold:
                entry = entries.get(pause.service)
                if entry is not None:
                    told = [s for s in entry.get("told", []) if s != session_id]
                    entry["told"] = (told + [session_id])[-MAX_TOLD:]
            self._write(state)
        parts = "; ".join(p.notice() for p in untold)
        fallbacks = ", ".join(FALLBACKS.get(p.service, "work goes on") for p in untold)
        return f"[memsift] {parts}; {fallbacks}."

    def _told(self, service: str) -> list[str]:
        entry = self._entries(self._read()).get(service) or {}
        told = entry.get("told", [])
        return told if isinstance(told, list) else []

    # -- the user ------------------------------------------------------------------------
    def pause(self, service: str, for_s: float | None = None) -> Pause:
        """A user pause, until resumed or for `for_s` seconds."""
        until = (self.clock() + timedelta(seconds=for_s)).isoformat(timespec="seconds") \
            if for_s else ""
        with file_lock(self.lock_path):
            state = self._read()
            entries = self._entries(state)
            old = entries.get(service)
            if old is not None and old.get("by") == "fault":
                self._close(service, old, by="user")
            entry = old if old is not None and old.get("by") == "user" else \
                self._new_entry(service, "user", "", "user")
            entry["until"] = until
            state.setdefault("services", {})[service] = entry
            self._write(state)
        log_line("info", "service paused by the user", service=service, until=until)
        return Pause.from_dict(service, entry)

    def resume(self, service: str, by: str = "user") -> bool:
        """End any pause of the service; returns whether there was one."""
        return self._end(service, by=by)

    # -- probes --------------------------------------------------------------------------
    def probe_every(self, entry: Mapping[str, Any], state: Mapping[str, Any]) -> float:
        """The probe interval, doubled for each recent flap of the service."""
        flaps = int((state.get("flaps") or {}).get(entry.get("service", ""), {}).get("count", 0))
        return min(self.probe_every_s * (2 ** min(flaps, 10)), max(MAX_PROBE_EVERY_S,
                                                                   self.probe_every_s))

    def _probe_due(self, entry: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
        last = entry.get("probe_at") or entry.get("since") or ""
        waited = (self.clock() - parse_when(str(last))).total_seconds()
        return waited >= self.probe_every(entry, state)

    def _claim_probe(self, service: str) -> bool:
        """Mark a probe as started, unless another process just did."""
        with file_lock(self.lock_path):
            state = self._read()
            entry = self._entries(state).get(service)
            if entry is None or entry.get("by") != "fault" or not self._probe_due(entry, state):
                return False
            entry["probe_at"] = self.clock().isoformat(timespec="milliseconds")
            self._write(state)
            return True

    def run_probe(self, service: str, settings, transport=None) -> bool:
        """Probe a paused service now; resume it when it answers. Returns whether it is up."""
        pause = self.pause_of(service)
        if pause is None:
            return True
        if pause.by == "user":
            return False  # the user said so: no probe overrides it
        try:
            PROBES[service](settings, probe_timeout(service, settings), transport)
        except HealthError as exc:
            self._note_probe_failure(service, exc)
            return False
        self._end(service, by="probe")
        return True

    def _note_probe_failure(self, service: str, exc: HealthError) -> None:
        with file_lock(self.lock_path):
            state = self._read()
            entry = self._entries(state).get(service)
            if entry is not None:
                entry["detail"] = short(exc)
                entry["probes"] = int(entry.get("probes", 0)) + 1
                entry["probe_at"] = self.clock().isoformat(timespec="milliseconds")
                self._write(state)
        log_line("info", "health probe: still down", service=service, reason=exc.reason,
             detail=short(exc))

    # -- state changes -------------------------------------------------------------------
    def _new_entry(self, service: str, reason: str, detail: str, by: str) -> dict[str, Any]:
        at = self.clock()
        stamp = at.strftime("%Y%m%dT%H%M%S")
        return {"service": service, "since": at.isoformat(timespec="seconds"),
                "reason": reason, "detail": detail, "by": by, "until": "",
                "outage": f"{service}-{stamp}-{os.getpid()}", "told": [], "probes": 0}

    def _start(self, service: str, reason: str, detail: str, by: str, until: str = "") -> bool:
        with file_lock(self.lock_path):
            state = self._read()
            entries = self._entries(state)
            if service in entries:
                return True
            entry = self._new_entry(service, reason, detail, by)
            entry["until"] = until
            state.setdefault("services", {})[service] = entry
            self._count_flap(state, service)
            self._write(state)
        log_line("warning", "service paused", service=service, reason=reason, detail=detail)
        return True

    def _count_flap(self, state: dict[str, Any], service: str) -> None:
        flaps = state.setdefault("flaps", {}).setdefault(service, {"count": 0, "last_end": ""})
        last_end = flaps.get("last_end") or ""
        recent = last_end and \
            (self.clock() - parse_when(last_end)).total_seconds() < FLAP_WINDOW_S
        flaps["count"] = int(flaps.get("count", 0)) + 1 if recent else 0

    def _end(self, service: str, by: str) -> bool:
        with file_lock(self.lock_path):
            state = self._read()
            entry = self._entries(state).get(service)
            if entry is None:
                return False
            del state["services"][service]
            self._close(service, entry, by=by)
            if entry.get("by") == "fault":
                flaps = state.setdefault("flaps", {}).setdefault(service, {"count": 0})
                flaps["last_end"] = self.clock().isoformat(timespec="seconds")
            self._write(state)
        log_line("info", "service resumed", service=service, by=by)
        return True

    def _close(self, service: str, entry: Mapping[str, Any], by: str) -> None:
        """Append the ended outage to the history (start, end, reason)."""
        end = self.clock().isoformat(timespec="seconds")
        if by == "expiry" and entry.get("until"):
            end = str(entry["until"])
        record = {"service": service, "start": entry.get("since", ""), "end": end,
                  "reason": entry.get("reason", ""), "detail": entry.get("detail", ""),
                  "paused_by": entry.get("by", "fault"), "resumed_by": by,
                  "told": len(entry.get("told", []))}
        try:
            append_line(self.history_path, json.dumps(record, ensure_ascii=False))
        except OSError as exc:  # a full disk loses a history line, never the resume
            log_line("warning", "outage history not written", error=str(exc))

    def _write(self, state: dict[str, Any]) -> None:
        state["v"] = STATE_VERSION
        atomic_write(self.path, json.dumps(state, ensure_ascii=False, indent=1))

    # -- history -------------------------------------------------------------------------
    def history(self, n: int = 20) -> list[dict[str, Any]]:
        """The last `n` ended outages, oldest first; unreadable lines skipped."""
        try:
            lines = self.history_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines[-n:] if n > 0 else []:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def snapshot(self) -> dict[str, Any]:
        """Everything `memsift status` shows about health, as plain data."""
        state = self._read()
        entries = self._entries(state)
        at = self.clock()
        services = {}
        for service in SERVICES:
            entry = entries.get(service)
            pause = Pause.from_dict(service, entry) if entry is not None else None
            if pause is None or pause.expired(at):
                services[service] = {"state": "ok"}
                continue
            services[service] = {
                "state": "paused", "by": pause.by, "since": pause.since, "reason": pause.reason,
                "detail": pause.detail, "until": pause.until, "probes": entry.get("probes", 0),
                "last_probe": entry.get("probe_at", ""), "sessions_told": len(entry.get("told", [])),
                "probe_every_s": self.probe_every(entry, state),
            }
        return {"services": services, "outages": self.history(20)}


def judge_service(settings) -> str:
    """The service the cascade's judge steps call: "decisions" for a typed decision API,
    "llm" for chat completions (the only remote judge before)."""
    from memsift.config import DECISION_BACKENDS, judge_backend

    return "decisions" if judge_backend(settings) in DECISION_BACKENDS else "llm"


def probe_all(settings, transport=None) -> dict[str, bool]:
    """Probe every paused service now (the session-end worker calls this); returns up/down."""
    health = Health.for_settings(settings)
    return {p.service: health.run_probe(p.service, settings, transport)
            for p in health.pauses() if p.by == "fault"}


def main(argv: list[str]) -> int:
    """`python -m memsift.services.health probe [service...]`: the detached probe. Never raises."""
    try:
        from memsift.config import load_settings

        settings = load_settings(strict=False)
        health = Health.for_settings(settings)
        services = [s for s in argv[1:] if s in SERVICES] or list(SERVICES)
        for service in services:
            up = health.run_probe(service, settings)
            log_line("info", "health probe done", service=service, up=up)
    except Exception as exc:  # noqa: BLE001 - a detached probe has nobody to tell but the log
        log_line("error", "health probe failed", error=f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
