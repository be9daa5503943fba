"""`memsift hook <host> <event>`: the process a host runs on each hook event.

Kept lean (no click, no rich) because it runs before every prompt. Whatever happens it exits
0: exit 2 would block the user's prompt, and any other failure is logged, never shown.
"""

from __future__ import annotations

import contextlib
import sys
import time

MAX_STDIN_BYTES = 8 * 1024 * 1024  # a 5 MB prompt must still be handled (and ignored)
HOSTS = ("claude-code", "codex")
EVENTS = ("UserPromptSubmit", "Stop", "SessionEnd")


def main(argv: list[str]) -> int:
    started = time.monotonic()
    try:
        _run(argv, started)
    except BaseException as exc:  # noqa: BLE001 - a hook never breaks the session
        if isinstance(exc, KeyboardInterrupt):
            return 0
        with contextlib.suppress(BaseException):
            from memsift.log import log

            log("error", "hook failed, nothing added", error=f"{type(exc).__name__}: {exc}",
                argv=argv)
    return 0


def _run(argv: list[str], started: float) -> None:
    from memsift.log import log

    if len(argv) < 2 or argv[0] not in HOSTS or argv[1] not in EVENTS:
        log("warning", "hook called with unknown arguments, ignored", argv=argv)
        return
    host, event_name = argv[0], argv[1]
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        log("warning", "hook input too large, ignored", host=host, event=event_name)
        return
    from memsift.hosts import adapter_for

    adapter = adapter_for(host)
    event = adapter.parse_event(raw, event_name)
    if event is None:
        return  # the adapter logged why
    from memsift.config import load_settings

    settings = load_settings(strict=False)
    for warning in settings.warnings:
        log("warning", warning)
    if event_name == "UserPromptSubmit":
        from memsift.prompt.cascade import run_prompt

        result = run_prompt(event, settings, started=started)
        out = adapter.render_result(result)
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    else:
        from memsift.session_end.worker import hand_off

        hand_off(event, settings)
