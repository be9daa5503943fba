"""The user's own local Cognee server (`memsift cognee start|stop|status`): started once on a
fixed port with its own data folder, its API key created and written to memsift's config file
(0600, the user's other settings kept), its processes' handles kept so they outlive the
command. How a server is started and stopped is cognee_server.py's."""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
import time
from pathlib import Path

from memsift.fsutil import process_alive
from memsift.services.cognee_server import (
    CogneeServerError,
    ServerPlan,
    cognee_python,
    create_api_key,
    start_cognee,
    start_model_server,
    stop_process,
    wait_healthy,
)

# --- the user's own local server (`memsift cognee start|stop|status`) ---------------------------

DEFAULT_PORT = 8737  # fixed, so the URL in the config file stays valid across restarts


def server_dir(settings) -> Path:
    return settings.paths.data_dir / "cognee-server"


def _state_file(settings) -> Path:
    return server_dir(settings) / "server.json"


def read_server_state(settings) -> dict:
    try:
        return json.loads(_state_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _password(settings) -> str:
    """The local user's password, made once and kept 0600 beside the server's data."""
    from memsift.fsutil import atomic_write

    path = server_dir(settings) / "password"
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    password = secrets.token_urlsafe(24)
    atomic_write(path, password)
    return password


def start_local(settings, port: int = DEFAULT_PORT) -> dict:
    """Start the model server and Cognee (if not running), create an API key on first start,
    store url + key in the config file. Returns the server state."""
    from memsift.fsutil import atomic_write
    from memsift.paths import ensure_dir

    state = read_server_state(settings)
    if state and all(process_alive(pid) for pid in state.get("pids", [])):
        return state
    python = cognee_python(settings)
    if python is None or not python.exists():
        raise CogneeServerError("Cognee is not installed: run `memsift cognee install`")
    root = ensure_dir(server_dir(settings))
    logs = ensure_dir(settings.paths.log_dir)
    model, model_url = start_model_server(logs / "model-server.log")
    plan = ServerPlan(root, port, _password(settings), model_url=model_url,
                      llm_url=settings["llm.base_url"], llm_key=settings["llm.api_key"],
                      llm_model=settings["llm.model"])
    cognee = start_cognee(plan, python, logs / "cognee-server.log")
    _keep_handles(model, cognee)
    state = {"url": plan.url, "pids": [cognee.pid, model.pid], "model_url": model_url,
             "offline": not plan.llm_url, "started": time.time()}
    atomic_write(_state_file(settings), json.dumps(state))
    try:
        state["healthy_after_s"] = wait_healthy(plan.url, cognee)
    except CogneeServerError:
        stop_local(settings)
        raise
    if not (settings["cognee.api_key"] and settings["cognee.url"] == plan.url):
        key = create_api_key(plan.url, plan.password)
        write_config_keys(settings.paths.config_file, {"url": plan.url, "api_key": key})
    return state


_DETACHED: list[subprocess.Popen] = []


def _keep_handles(*procs: subprocess.Popen) -> None:
    """The servers outlive this command: keep their handles (a dropped handle of a running
    child warns) and close the pipe the model server's URL came through."""
    for proc in procs:
        if proc.stdout is not None:
            proc.stdout.close()
        _DETACHED.append(proc)


def stop_local(settings) -> bool:
    state = read_server_state(settings)
    stopped = False
    for pid in state.get("pids", []):
        stopped = stop_process(int(pid)) or stopped
    with contextlib.suppress(FileNotFoundError):
        _state_file(settings).unlink()
    return stopped


def local_status(settings) -> dict:
    """What runs, and whether the configured server answers /health."""
    from memsift.longterm.cognee import CogneeClient

    state = read_server_state(settings)
    pids = state.get("pids", [])
    url = settings["cognee.url"] or state.get("url", "")
    healthy = False
    if url:
        client = CogneeClient(url, settings["cognee.api_key"])
        healthy = client.health()
        client.close()
    return {"url": url, "local": bool(state), "running": bool(pids) and all(map(process_alive, pids)),
            "healthy": healthy, "offline": state.get("offline"),
            "api_key": bool(settings["cognee.api_key"])}


# --- writing our two keys into the user's config ------------------------------------------------


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def set_table_keys(text: str, table: str, values: dict[str, str]) -> str:
    """Set keys in one [table] of a TOML text, leaving every other line as it was."""
    lines = text.splitlines()
    header = f"[{table}]"
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        body = [f"{k} = {_toml_string(v)}" for k, v in values.items()]
        sep = [""] if lines and lines[-1].strip() else []
        return "\n".join(lines + sep + [header] + body) + "\n"
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].lstrip().startswith("[")), len(lines))
    remaining = dict(values)
    for i in range(start + 1, end):
        key = lines[i].split("=", 1)[0].strip()
        if "=" in lines[i] and key in remaining:
            lines[i] = f"{key} = {_toml_string(remaining.pop(key))}"
    insert = [f"{k} = {_toml_string(v)}" for k, v in remaining.items()]
    lines[start + 1:start + 1] = insert
    return "\n".join(lines) + "\n"


def write_config_keys(path: Path, values: dict[str, str]) -> None:
    """Store cognee.url/api_key in the config file (0600), keeping the rest of it."""
    import tomllib

    from memsift.fsutil import atomic_write, file_lock

    with file_lock(path.with_name(path.name + ".lock")):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        updated = set_table_keys(text, "cognee", values)
        tomllib.loads(updated)  # never write a file the next start cannot read
        atomic_write(path, updated, mode=0o600)
