"""What the loopback stand-ins for the typed decision APIs share: a threaded server on
127.0.0.1 with a request log and a fault queue, the handler that reads a request, waits the
scripted latency or fault and sends the answer, the schema checks' error (Invalid) and helpers,
and the default answers. The stand-ins themselves are memsift.bench.systemone_server (System
One) and memsift.bench.openai_decisions_server (OpenAI Decisions). The latency benchmark runs
memsift against them (`memsift bench --fanout`) and the tests drive memsift and the official
clients against them.

Each validates every request against its API's documented schema and answers a bad one as the
API does. Good ones get scripted probabilities after a scripted latency; `faults` queues the
failures a real server has: an error status (401, 422, 429 with Retry-After, 529, 500), a hang,
a reply cut mid-body, a refusal (OpenAI).

The default answers read memsift's own states (message, item) by shared words, so a note that
answers the message scores high and an unrelated one low; `decide` replaces them.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

POLL_S = 0.02  # how soon the server notices stop()
# Connections waiting to be accepted: the default 5 drops the SYNs of a prompt's ~30 requests
# at once, and a dropped SYN is retried after a second, which a real API never costs.
BACKLOG = 128
MAX_OPTIONS = 255  # System One and OpenAI: a 256th option is rejected
MAX_LEVELS = 10  # System One: 11 score levels are rejected
MAX_BODY = 32 * 1024 * 1024
CHARS_PER_TOKEN = 4  # the estimate the limits and the usage are counted in
FIXED_TOKENS, QUESTION_TOKENS, OPTION_TOKENS = 261, 9, 8  # what a System One request bills
ANSWER_P, MISS_P = 0.92, 0.08  # the default odds: an item sharing words answers
SHARED_WORDS = 2  # content words an item must share with the message to answer it
SEARCH_KIND, PLAIN_KIND = "past_choice", "instruction"  # a question; anything else


@dataclass
class Fault:
    """One scripted failure for the next request: a status (with headers and body), a hang
    (no answer until the server stops), a reply cut mid-body, or a refusal (OpenAI)."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    hang: bool = False
    cut: bool = False
    refuse: bool = False


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 4}


def default_decide(kind: str, instructions: str, options: list[Any], state: Any) -> list[float]:
    """Probabilities over `options` ([True, False] for a yes/no): memsift's own states read
    by shared words, anything else at even odds."""
    state = state_object(state)
    message = str(state.get("message", "")) if isinstance(state, dict) else ""
    if kind == "choice" and SEARCH_KIND in options and message:
        wanted = SEARCH_KIND if message.rstrip().endswith("?") else PLAIN_KIND
        rest = (1 - ANSWER_P) / max(1, len(options) - 1)
        return [ANSWER_P if o == wanted else rest for o in options]
    if kind == "yes" and isinstance(state, dict) and "item" in state:
        shared = len(_words(message) & _words(str(state["item"])))
        p = ANSWER_P if shared >= SHARED_WORDS else MISS_P
        return [p, 1 - p]
    if kind == "yes":
        return [ANSWER_P, 1 - ANSWER_P]  # worth keeping, worth a search
    return [1.0 / len(options)] * len(options)


def state_object(state: Any) -> Any:
    """OpenAI's input as memsift sends it: the state is the last message's JSON."""
    if isinstance(state, list) and state and isinstance(state[-1], dict):
        try:
            return json.loads(state[-1].get("content", ""))
        except (TypeError, ValueError):
            return state
    return state


def tokens_of(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False)) // CHARS_PER_TOKEN if value is not None \
        else 0


class Invalid(Exception):
    """A request the API rejects: where (loc), why (msg), a machine code (type)."""

    def __init__(self, loc: list, msg: str, kind: str = "value_error") -> None:
        super().__init__(msg)
        self.loc, self.msg, self.kind = loc, msg, kind


def check_content(value: Any, loc: list, *, optional: bool = True) -> None:
    """Text, an object or an array (System One's content); None where optional."""
    if value is None and optional:
        return
    if not isinstance(value, (str, dict, list)):
        raise Invalid(loc, "Input should be a valid string, object or array", "type_error")


def check_fields(obj: dict, allowed: set[str], loc: list) -> None:
    for key in obj:
        if key not in allowed:
            raise Invalid(loc + [key], "Extra inputs are not permitted", "extra_forbidden")


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hanging handler must not block the close
    request_queue_size = BACKLOG


class DecisionServer:
    """The shared life of both stand-ins: a threaded server, a request log, a fault queue."""

    path = ""

    def __init__(self, *, api_key: str | None = None, latency_s: float = 0.0,
                 decide: Callable[[str, str, list[Any], Any], list[float]] = default_decide
                 ) -> None:
        self.api_key = api_key
        self.latency_s = latency_s
        self.decide = decide
        self.requests: list[Seen] = []
        self.faults: deque[Fault] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting and reading -------------------------------------------------------------
    def fail(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def decisions(self) -> list[Seen]:
        """The decision requests received (probes and good requests alike)."""
        return [r for r in self.requests if r.path.endswith(self.path)]

    def item_requests(self) -> list[Seen]:
        """Requests that judged one note or passage (their state holds an `item`)."""
        found = []
        for seen in self.decisions():
            state = state_object(self.state_of(seen.body))
            if isinstance(state, dict) and "item" in state:
                found.append(seen)
        return found

    def state_of(self, body: Any) -> Any:
        raise NotImplementedError

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def origin(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # -- life ------------------------------------------------------------------------------
    def start(self, port: int = 0) -> Self:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._stop.clear()
        self._httpd = _Server(("127.0.0.1", port), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": POLL_S}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering -------------------------------------------------------------------------
    def next_fault(self) -> Fault | None:
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def request_id(self) -> str:
        return f"req_{next(self._ids):06d}"

    def authorised(self, headers: Mapping[str, str]) -> bool:
        return self.api_key is None or headers.get("authorization") == f"Bearer {self.api_key}"

    def route(self, method: str, path: str, body: Any, headers: Mapping[str, str],
              fault: Fault | None) -> tuple[int, Any]:
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    owner: DecisionServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            return Invalid([], "body too large")
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except (ValueError, UnicodeDecodeError):
            return raw.decode("utf-8", errors="replace")

    def _serve(self, method: str) -> None:
        owner = self.owner
        body = self._read() if method == "POST" else None
        headers = {k.lower(): v for k, v in self.headers.items()}
        seen = Seen(self.path, headers, body)
        with owner._lock:
            owner.requests.append(seen)
        fault = owner.next_fault() if method == "POST" else None
        if fault is not None and fault.hang:
            owner._stop.wait()
            return
        if owner.latency_s and owner._stop.wait(owner.latency_s):
            return
        status, reply = owner.route(method, self.path, body, headers, fault)
        seen.status = status
        self._send(status, reply, fault)

    def _send(self, status: int, reply: Any, fault: Fault | None) -> None:
        payload = json.dumps(reply).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header(getattr(self.owner, "request_id_header", "x-request-id"),
                             self.owner.request_id())
            for name, value in (fault.headers.items() if fault else ()):
                self.send_header(name, value)
            if fault is not None and fault.cut:
                self.send_header("content-length", str(len(payload) + 64))
                self.end_headers()
                self.wfile.write(payload[: len(payload) // 2])
                self.close_connection = True
                return
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its deadline passed)

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")
