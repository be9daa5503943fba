"""A local Cognee server for a user with none, for the tests and for the bench.

Cognee (about 1.6 GB with its dependencies, 5-9 s to import) runs in its own Python: the
`cognee` extra in memsift's environment, or a separate venv (`memsift cognee install`), so
memsift's own install stays light. Beside it runs memsift's model server
(memsift.services.embed_server): Cognee's embeddings come from memsift's offline model, and, when no
language model is configured, cognify's questions get the offline answer (an empty graph).

Access control stays on: a user is created from DEFAULT_USER_EMAIL/PASSWORD, memsift logs in
once and creates an API key, and every later request carries only that key.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from memsift.fsutil import process_alive

COGNEE_VERSION = "1.6.5"  # the version whose API shapes memsift was checked against
HEALTH_TIMEOUT_S = 180.0  # healthy after 10-12 s on a quiet machine; far more on a busy one
MODEL_SERVER_TIMEOUT_S = 60.0  # the model server prints its URL once its port is bound
COGNIFY_TIMEOUT_S = 900.0  # 300 notes took 81 s here; a large first upload may take minutes
STOP_GRACE_S = 10.0  # SIGTERM, then SIGKILL after this
LOGIN_EMAIL = "memsift@localhost.example"  # the local server's one user
DONE_STATES = {"DATASET_PROCESSING_COMPLETED", "DATASET_PROCESSING_ERRORED"}


class CogneeServerError(Exception):
    """The local server could not be installed, started, reached or stopped."""


# --- finding Cognee's Python --------------------------------------------------------------------


def default_venv(settings=None) -> Path:
    from memsift.paths import get_paths

    paths = settings.paths if settings is not None else get_paths()
    return paths.cache_dir / "cognee-venv"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def cognee_python(settings=None) -> Path | None:
    """MEMSIFT_COGNEE_PYTHON, else this Python if the `cognee` extra is installed, else the
    venv made by `memsift cognee install`."""
    explicit = os.environ.get("MEMSIFT_COGNEE_PYTHON")
    if explicit:
        return Path(explicit)
    if importlib.util.find_spec("cognee") is not None:
        return Path(sys.executable)
    candidate = venv_python(default_venv(settings))
    return candidate if candidate.exists() else None


def install_venv(venv: Path) -> None:
    """Create the venv and install Cognee into it (about 1.6 GB, a minute or two)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv_python(venv)), "-m", "pip", "install", "--quiet",
                    f"cognee=={COGNEE_VERSION}"], check=True)


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", ("import sysconfig; print(sysconfig.get_paths()"
                          "['purelib'])")], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


# --- the environment Cognee runs in -------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerPlan:
    """Everything one local server needs: where it keeps its data, its port, its models."""

    root: Path
    port: int
    password: str
    model_url: str = ""  # memsift's model server, once started
    llm_url: str = ""  # a real language model (OpenAI-compatible); empty = offline answers
    llm_key: str = ""
    llm_model: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def cognee_env(plan: ServerPlan, python: Path) -> dict[str, str]:
    """Offline, private, loopback only. Each setting's reason is in docs/cognee.md."""
    from memsift.model import embed
    empty_env = plan.root / "empty.env"
    empty_env.touch()
    site = _site_packages(python)
    offline = not plan.llm_url
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_"))}
    env.update({
        "TELEMETRY_DISABLED": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "TIKTOKEN_CACHE_DIR": str(site / "litellm" / "litellm_core_utils" / "tokenizers"),
        "COGNEE_ENV_FILE": str(empty_env),  # else a .env in the cwd overrides all of this
        "DATA_ROOT_DIRECTORY": str(plan.root / "data"),
        "SYSTEM_ROOT_DIRECTORY": str(plan.root / "system"),
        "CACHE_ROOT_DIRECTORY": str(plan.root / "cache"),
        "HOME": str(plan.root / "home"),
        "ENABLE_BACKEND_ACCESS_CONTROL": "true",  # off, dataset filters do not isolate
        "DEFAULT_USER_EMAIL": LOGIN_EMAIL,
        "DEFAULT_USER_PASSWORD": plan.password,
        "HTTP_API_HOST": "127.0.0.1",
        "HTTP_API_PORT": str(plan.port),
        "EMBEDDING_PROVIDER": "openai_compatible",
        "EMBEDDING_ENDPOINT": plan.model_url,
        "EMBEDDING_MODEL": "text-embedding-3-small",  # a name tiktoken knows, for chunking
        "EMBEDDING_DIMENSIONS": str(embed.DIM),
        "EMBEDDING_MAX_COMPLETION_TOKENS": str(embed.MAX_TOKENS),
        "EMBEDDING_API_KEY": "local",
        "LLM_PROVIDER": "openai",
        "LLM_ENDPOINT": plan.model_url if offline else plan.llm_url,
        "LLM_MODEL": "openai/memsift-offline" if offline else f"openai/{plan.llm_model}",
        "LLM_API_KEY": "local" if offline else (plan.llm_key or "local"),
        "GRAPH_EXTRACTOR": "llm",  # "auto" would pick the GLiNER demo, which downloads
    })
    if offline:
        env["SUMMARY_METHOD"] = "from_extraction"  # no invented summaries: none at all
    (plan.root / "home").mkdir(parents=True, exist_ok=True)
    return env


# --- processes ----------------------------------------------------------------------------------


def start_model_server(log_path: Path, env: dict[str, str] | None = None
                       ) -> tuple[subprocess.Popen, str]:
    """memsift's model server on a free loopback port; returns the process and its /v1 URL."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "memsift.services.embed_server", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                                env={**os.environ, **(env or {})})
    ready = _read_line_within(proc, MODEL_SERVER_TIMEOUT_S)
    if not ready.startswith("http://"):
        stop_child(proc)
        raise CogneeServerError(f"the model server did not start (see {log_path})")
    return proc, ready


def _read_line_within(proc: subprocess.Popen, seconds: float) -> str:
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(seconds):
            return ""
    return proc.stdout.readline().decode().strip()


def start_cognee(plan: ServerPlan, python: Path, log_path: Path) -> subprocess.Popen:
    python = python.absolute()  # it runs in its own folder; absolute, not resolved (a venv)
    env = cognee_env(plan, python)
    with open(log_path, "ab") as log:
        return subprocess.Popen([str(python), "-m", "cognee.api.client"], env=env,
                                cwd=str(plan.root), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_healthy(url: str, proc: subprocess.Popen | None = None,
                 timeout_s: float = HEALTH_TIMEOUT_S) -> float:
    """Seconds until GET /health answered 200; raises if the process dies or time runs out."""
    start = time.monotonic()
    with httpx.Client(trust_env=False) as http:
        while time.monotonic() - start < timeout_s:
            if proc is not None and proc.poll() is not None:
                raise CogneeServerError(f"Cognee exited with status {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if http.get(url + "/health", timeout=2.0).status_code == 200:
                    return time.monotonic() - start
            time.sleep(0.5)
    raise CogneeServerError(f"Cognee was not healthy within {timeout_s:.0f}s")


def stop_process(pid: int, grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM the process group we started, SIGKILL after the grace period."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:  # not our child: poll for its end instead
            if not process_alive(pid):
                return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True


def stop_child(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """Stop a process we started and still hold: its group, then reap it and close its pipe."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


# --- the one user and its key -------------------------------------------------------------------


def create_api_key(url: str, password: str, name: str = "memsift") -> str:
    """Log in once as the local user and create an API key (the only JWT memsift ever uses)."""
    with httpx.Client(base_url=url, trust_env=False, timeout=30.0) as http:
        login = http.post("/api/v1/auth/login",
                          data={"username": LOGIN_EMAIL, "password": password})
        if login.status_code != 200:
            raise CogneeServerError(f"login failed ({login.status_code}): {login.text[:200]}")
        token = login.json()["access_token"]
        reply = http.post("/api/v1/auth/api-keys", json={"name": name},
                          headers={"Authorization": f"Bearer {token}"})
        if reply.status_code >= 400:
            raise CogneeServerError(f"API key not created ({reply.status_code})")
        return reply.json()["key"]


# --- a throwaway server (tests, bench) ----------------------------------------------------------


@dataclass
class RunningServer:
    url: str
    api_key: str
    root: Path
    pids: tuple[int, ...]
    healthy_after_s: float


@contextlib.contextmanager
def throwaway_server(python: Path | None = None, *, log_dir: Path | None = None,
                     keep_root: bool = False, model_env: dict[str, str] | None = None
                     ) -> Iterator[RunningServer]:
    """A fresh local Cognee server with memsift's model server, in a temp folder, removed on
    exit. `with throwaway_server() as server: ... server.url, server.api_key`. model_env:
    extra environment for the model server (MEMSIFT_HOME, for its weights cache)."""
    python = python or cognee_python()
    if python is None or not python.exists():
        raise CogneeServerError("no Cognee installed: run `memsift cognee install`")
    root = Path(tempfile.mkdtemp(prefix="memsift-cognee-"))
    logs = log_dir or root
    procs: list[subprocess.Popen] = []
    try:
        model, model_url = start_model_server(logs / "model-server.log", model_env)
        procs.append(model)
        plan = ServerPlan(root, free_port(), secrets.token_urlsafe(16), model_url=model_url)
        procs.append(start_cognee(plan, python, logs / "cognee-server.log"))
        healthy = wait_healthy(plan.url, procs[-1])
        key = create_api_key(plan.url, plan.password)
        yield RunningServer(plan.url, key, root, tuple(p.pid for p in procs), healthy)
    finally:
        for proc in reversed(procs):
            stop_child(proc)
        if not keep_root:
            shutil.rmtree(root, ignore_errors=True)


# --- importing a memory and waiting for cognify -------------------------------------------------


def wait_cognified(client, dataset: str, timeout_s: float = COGNIFY_TIMEOUT_S) -> float:
    """Seconds until the dataset's processing finished; raises if it errored or ran out."""
    from memsift.longterm.cognee import CogneeStore

    dataset_id = client.dataset_id(dataset)
    if dataset_id is None:
        raise CogneeServerError(f"no dataset {dataset!r}")
    return CogneeStore(client, dataset, 0.0).wait_cognified(dataset_id, timeout_s)


def import_memory(url: str, api_key: str, dataset: str, passages: list[dict],
                  index_path: Path | None = None) -> dict:
    """Put passages ({"id", "text", "written"?}) into a dataset, cognify, wait until done.
    With index_path (a project's sync state path, memsift.longterm.sync.state_path), results found
    later carry each passage's own id and date. Returns {"added", "cognify_s"}."""
    from memsift.longterm.base import Passage
    from memsift.longterm.cognee import CogneeClient, CogneeStore

    store = CogneeStore(CogneeClient(url, api_key), dataset, 0.0, index_path=index_path)
    try:
        started = time.monotonic()
        added = store.add([Passage(id=str(p["id"]), text=p["text"],
                                   written=str(p.get("written", ""))) for p in passages])
        return {"added": added, "cognify_s": time.monotonic() - started}
    finally:
        store.close()
