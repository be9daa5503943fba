"""The hook's log: one line per notable thing, never on stdout (stdout is the host's); read
back for `memsift status` (its warnings and errors, grouped by message)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys

from memsift.clock import now_iso
from memsift.paths import get_paths

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def log(level: str, message: str, **fields: object) -> None:
    """Append `time level message {fields}` to the log file; never raises."""
    threshold = _LEVELS.get(os.environ.get("MEMSIFT_LOG_LEVEL", "info").lower(), 20)
    if _LEVELS.get(level, 20) < threshold:
        return
    extra = " " + json.dumps(fields, default=str, ensure_ascii=False) if fields else ""
    line = f"{now_iso()} {level.upper()} pid={os.getpid()} {message}{extra}"
    try:
        from memsift.fsutil import append_line

        append_line(get_paths().log_file, line)
    except Exception:  # the log must never break a hook  # noqa: BLE001
        with contextlib.suppress(Exception):
            print(line, file=sys.stderr)


# --- reading it back, for `memsift status` ---------------------------------------------

PROBLEMS_SCAN_BYTES = 512 * 1024  # the log's tail: status must stay instant on a big log
PROBLEM_LEVELS = ("WARNING", "ERROR")
_LINE = re.compile(r"^(?P<time>\S+) (?P<level>[A-Z]+) pid=\d+ (?P<message>.*?)(?: (?P<fields>\{.*\}))?$")


def read_problems(path, scan_bytes: int = PROBLEMS_SCAN_BYTES) -> list[dict]:
    """The warnings and errors in the log's tail (hook errors, bad input, failed steps), one
    entry per message: its level, count, last time and the last line's fields (the why)."""
    groups: dict[str, dict] = {}
    for line in _tail_lines(path, scan_bytes):
        match = _LINE.match(line)
        if not match or match["level"] not in PROBLEM_LEVELS:
            continue
        entry = groups.setdefault(match["message"], {"message": match["message"], "count": 0})
        entry.update(count=entry["count"] + 1, level=match["level"].lower(),
                     last=match["time"], fields=_fields(match["fields"]))
    return sorted(groups.values(), key=lambda e: e["last"], reverse=True)


def _tail_lines(path, scan_bytes: int) -> list[str]:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - scan_bytes))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > scan_bytes else lines  # the first may be cut in half


def _fields(text: str | None) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
