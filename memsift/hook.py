"""`memsift hook <host> <event>`: the process a host runs on each hook event.

Kept lean (no click, no rich) because it runs before every prompt. Whatever happens it exits
0: exit 2 would block the user's prompt, and any other failure is logged, never shown.

A prompt is first offered to the warm server (memsift.warm), which keeps the prompt path
loaded; when none listens, this process answers it and a server starts for the next one.
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
        _failed(exc, argv)
    return 0


def _run(argv: list[str], started: float) -> None:
    if len(argv) < 2 or argv[0] not in HOSTS or argv[1] not in EVENTS:
        from memsift.log import log

        log("warning", "hook called with unknown arguments, ignored", argv=argv)
        return
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    server = None
    if argv[1] == "UserPromptSubmit" and len(raw) <= MAX_STDIN_BYTES:
        from memsift import warm

        if warm.enabled():
            server = warm.Client()
            answered = server.ask(argv, raw, started)
            if answered is not None:
                _print(answered)
                return
    _print(handle(argv, raw, started))
    if server is not None:
        server.start_if_none()  # after the answer: its loading does not slow this prompt


def _print(out: str) -> None:
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()


def handle(argv: list[str], raw: bytes, started: float, *, warm: bool = False) -> str:
    """One hook event, whose stdin was `raw`: what to print for the host ("" for nothing).
    The warm server answers its prompts through this too. Never raises."""
    try:
        return _handle(argv, raw, started, warm)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the session
        _failed(exc, argv)
        return ""


def _handle(argv: list[str], raw: bytes, started: float, warm: bool) -> str:
    from memsift.log import log

    host, event_name = argv[0], argv[1]
    if len(raw) > MAX_STDIN_BYTES:
        log("warning", "hook input too large, ignored", host=host, event=event_name)
        return ""
    from memsift.hosts import adapter_for

    adapter = adapter_for(host)
    event = adapter.parse_event(raw, event_name)
    if event is None:
        return ""  # the adapter logged why
    from memsift.config import load_settings

    settings = load_settings(strict=False)
    for warning in settings.warnings:
        log("warning", warning)
    if event_name == "UserPromptSubmit":
        from memsift.prompt.cascade import run_prompt

        result = run_prompt(event, settings, started=started, warm=warm)
        return adapter.render_result(result) or ""
    from memsift.session_end.worker import hand_off

    hand_off(event, settings)
    return ""


def prompt_budget() -> float:
    """The seconds a prompt may take under the current settings (the warm server tells the
    hook, which waits that long and a margin before it takes the server to hang)."""
    from memsift.config import load_settings
    from memsift.prompt.cascade import prompt_budget as budget_of

    return budget_of(load_settings(strict=False))


def _failed(exc: BaseException, argv: list[str]) -> None:
    with contextlib.suppress(BaseException):
        from memsift.log import log

        log("error", "hook failed, nothing added", error=f"{type(exc).__name__}: {exc}",
            argv=argv)
