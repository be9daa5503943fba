"""`memsift install` / `memsift uninstall`: memsift's hooks in a host's own config files, for
users who do not go through a plugin marketplace.

Claude Code reads hooks from settings.json (`~/.claude/settings.json`, or the project's
`.claude/settings.json`). Codex reads them from hooks.json (`$CODEX_HOME/hooks.json`, or the
project's `.codex/hooks.json`) and runs a hook only when the user's config.toml holds a trust
entry for it: `[hooks.state."<hooks.json>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."`,
the hash of the hook's normalized definition (see `codex_trusted_hash`). Without those entries
Codex skips the hooks silently, so the installer writes them.

Every edit is a merge: the user's other settings, hooks and trust entries stay as they were;
running it twice changes nothing; uninstall takes out only what install put in.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsift.fsutil import atomic_write

HOSTS = ("claude-code", "codex")
# Seconds each host gives a hook before cancelling it. The prompt hook works inside its own
# 2 s budget; the host's limit only has to sit above it with room for Python's start-up.
# Session end only queues a job and starts a detached worker; Codex clamps SessionEnd to 3 s
# and Claude Code cancels it after 1.5 s whatever is set, so 3 is the honest ceiling.
HOOK_TIMEOUTS_S = {"UserPromptSubmit": 10, "Stop": 10, "SessionEnd": 3}
# How Codex names the events in trust keys and hashes.
CODEX_EVENT_KEYS = {"UserPromptSubmit": "user_prompt_submit", "Stop": "stop",
                    "SessionEnd": "session_end"}
# A handler is memsift's when its command runs `memsift hook <host> <event>`.
_OURS = re.compile(r"(^|[\s/])(-m\s+)?memsift\s+hook\s+(claude-code|codex)\s+\w+\s*$")


class InstallError(Exception):
    """A config file cannot be read or merged; nothing was written."""


@dataclass(frozen=True)
class FileChange:
    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (now)", tofile=f"{self.path} (after)"))


def hook_command(python: str, host: str, event: str) -> str:
    """The command a host runs; -P keeps a `memsift` folder in the user's project from
    shadowing the installed package."""
    return f"{shlex.quote(python)} -P -m memsift hook {host} {event}"


def is_memsift_handler(handler: object) -> bool:
    return (isinstance(handler, dict) and isinstance(handler.get("command"), str)
            and bool(_OURS.search(handler["command"])))


# ---- the hooks table both hosts share: {"Event": [{"matcher"?, "hooks": [handler]}]} ----

def _without_ours(groups: list) -> list:
    kept = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        handlers = [h for h in group["hooks"] if not is_memsift_handler(h)]
        if handlers:
            kept.append({**group, "hooks": handlers})
        elif len(handlers) == len(group["hooks"]):
            kept.append(group)  # an empty group that was not ours: not ours to drop
    return kept


def merge_hooks(hooks: dict, host: str, python: str | None) -> dict:
    """`hooks` with memsift's handlers replaced by fresh ones (python given) or removed."""
    merged = dict(hooks)
    for event, timeout in HOOK_TIMEOUTS_S.items():
        groups = merged.get(event, [])
        if not isinstance(groups, list):
            raise InstallError(f"hooks.{event} is not a list")
        groups = _without_ours(groups)
        if python:
            groups.append({"hooks": [{"type": "command",
                                      "command": hook_command(python, host, event),
                                      "timeout": timeout}]})
        if groups:
            merged[event] = groups
        else:
            merged.pop(event, None)
    return merged


def _read_json(path: Path) -> tuple[str, dict]:
    if not path.exists():
        return "", {}
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it first") from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object")
    return text, data


def _hooks_file_change(path: Path, host: str, python: str | None) -> FileChange:
    before, data = _read_json(path)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: `hooks` is not an object")
    merged = merge_hooks(hooks, host, python)
    after_data = {**data, "hooks": merged} if merged else {
        k: v for k, v in data.items() if k != "hooks"}
    if after_data == data:
        return FileChange(path, before, before)
    after = json.dumps(after_data, indent=2, ensure_ascii=False) + "\n"
    return FileChange(path, before, after)


# ---- Codex trust ----

def codex_trusted_hash(event: str, handler: dict, matcher: str | None = None) -> str:
    """The hash Codex keeps in `trusted_hash`: sha256 of the key-sorted compact JSON of the
    hook's normalized identity (its event, its matcher when the event takes one, and the one
    handler with its timeout and async flag), checked against `codex app-server`'s
    hooks/list for the pinned Codex."""
    normalized = {"type": "command", "command": handler["command"],
                  "timeout": int(handler.get("timeout", 600)), "async": False}
    if handler.get("statusMessage"):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": CODEX_EVENT_KEYS[event], "hooks": [normalized]}
    if matcher is not None:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _handler_keys(hooks_path: Path, hooks: dict) -> dict[str, dict]:
    """Each handler of our events by its Codex trust key."""
    keys = {}
    for event, snake in CODEX_EVENT_KEYS.items():
        for g, group in enumerate(hooks.get(event, []) or []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                keys[f"{hooks_path}:{snake}:{g}:{h}"] = {"event": event, "handler": handler,
                                                          "group": group}
    return keys


def _trust_updates(hooks_path: Path, old: dict, new: dict, state: dict) -> dict[str, str | None]:
    """Key -> new trusted_hash (None: remove). memsift's handlers get fresh trust; another
    hook that moved (a group before it was removed) keeps the trust it had."""
    old_keys, new_keys = _handler_keys(hooks_path, old), _handler_keys(hooks_path, new)
    updates: dict[str, str | None] = {}
    for key, item in old_keys.items():
        if is_memsift_handler(item["handler"]) or new_keys.get(key) != item:
            updates[key] = None
    for key, item in new_keys.items():
        if is_memsift_handler(item["handler"]):
            updates[key] = codex_trusted_hash(item["event"], item["handler"])
            continue
        for old_key, old_item in old_keys.items():
            trusted = (state.get(old_key) or {}).get("trusted_hash")
            if old_item == item and trusted and old_key != key:
                updates[key] = trusted
    return {k: v for k, v in updates.items() if (state.get(k) or {}).get("trusted_hash") != v}


def _config_change(config: Path, hooks_path: Path, old: dict, new: dict) -> FileChange:
    import tomlkit

    before = config.read_text(encoding="utf-8") if config.exists() else ""
    try:
        doc = tomlkit.parse(before)
    except Exception as exc:  # tomlkit's parse errors share no base class worth naming
        raise InstallError(f"{config} is not valid TOML ({exc}); fix it first") from exc
    state_now = doc.get("hooks", {}).get("state", {})
    updates = _trust_updates(hooks_path, old, new, state_now)
    if not updates:
        return FileChange(config, before, before)
    hooks = doc.setdefault("hooks", tomlkit.table(is_super_table=True))
    state = hooks.setdefault("state", tomlkit.table(is_super_table=True))
    for key, trusted in updates.items():
        if trusted is None:
            if key in state:
                entry = state[key]
                entry.pop("trusted_hash", None)
                if not entry:
                    del state[key]
            continue
        if key in state:
            state[key]["trusted_hash"] = trusted
        else:
            entry = tomlkit.table()
            entry["trusted_hash"] = trusted
            state[key] = entry
    if not state:
        del hooks["state"]
    if not hooks:
        del doc["hooks"]
    return FileChange(config, before, tomlkit.dumps(doc))


# ---- where each host keeps things ----

def claude_settings_path(project: Path | None) -> Path:
    if project:
        return project.resolve() / ".claude" / "settings.json"
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base) if base else Path.home() / ".claude") / "settings.json"


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").resolve()


def codex_hooks_path(project: Path | None) -> Path:
    return project.resolve() / ".codex" / "hooks.json" if project else codex_home() / "hooks.json"


def plan(host: str, *, project: Path | None = None, python: str | None = None,
         remove: bool = False) -> list[FileChange]:
    """The file changes install (or uninstall, remove=True) would make; nothing written."""
    if host not in HOSTS:
        raise InstallError(f"unknown host {host!r}; use one of {', '.join(HOSTS)}")
    python = None if remove else (python or sys.executable)
    if host == "claude-code":
        return [_hooks_file_change(claude_settings_path(project), host, python)]
    hooks_path = codex_hooks_path(project)
    change = _hooks_file_change(hooks_path, host, python)
    old = json.loads(change.before or "{}").get("hooks", {})
    new = json.loads(change.after or "{}").get("hooks", {})
    # Trust lives in the user's config.toml only: Codex ignores trust set by a project layer.
    config = _config_change(codex_home() / "config.toml", hooks_path, old, new)
    return [change, config]


def codex_project_trusted(project: Path) -> bool:
    """Codex runs a project's .codex/hooks.json only once the project is trusted
    (`[projects."<abs path>"] trust_level = "trusted"` in the user's config.toml, which Codex
    writes when the user trusts the folder). memsift leaves that choice to the user."""
    import tomllib

    config = codex_home() / "config.toml"
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    entry = data.get("projects", {}).get(str(project.resolve()), {})
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def apply(changes: list[FileChange]) -> list[Path]:
    """Write the changed files (atomically, keeping each file's mode); returns their paths."""
    written = []
    for change in changes:
        if not change.changed:
            continue
        mode = change.path.stat().st_mode & 0o777 if change.path.exists() else 0o600
        atomic_write(change.path, change.after, mode=mode)
        written.append(change.path)
    return written
