"""The hook's log: one line per notable thing, never on stdout (stdout is the host's)."""

from __future__ import annotations

import contextlib
import json
import os
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
