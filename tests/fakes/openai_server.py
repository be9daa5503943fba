"""A fake OpenAI-compatible server: real HTTP on 127.0.0.1, scripted per test.

It speaks the parts of the API memsift uses: POST /v1/chat/completions (with or without
logprobs, JSON replies for `response_format`), POST /v1/embeddings and GET /v1/models. Every
request is recorded (path, headers, JSON body) so tests can check what left the machine.

Replies come from a queue (`script(...)`), then from `on_chat(body)` when the queue is empty.
Build them with `logprobs_reply`, `text_reply`, `json_reply`, `error_reply`, or `Reply(...)`
with a delay or `hang=True` (no answer until the server stops).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

FAKE_MODEL = "fake-judge-1"
POLL_S = 0.02  # how soon the server notices stop(); the default 0.5 s slows every test
EMBED_DIM = 384  # the same width as the offline model, so stores accept the vectors


@dataclass
class Reply:
    """One scripted answer: an HTTP status and JSON body, optionally late or never."""

    status: int = 200
    body: Any = None  # a dict (sent as JSON) or bytes (sent as they are)
    delay_s: float = 0.0
    hang: bool = False


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or the raw text when it was not JSON


def completion(content: str | None, logprobs: dict | None = None, model: str = FAKE_MODEL) -> dict:
    """A chat.completion object as OpenAI returns it."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "length",
            "logprobs": logprobs,
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _token_logprob(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def logprobs_reply(top: Mapping[str, float], **reply: Any) -> Reply:
    """An answer of one token: the most likely of `top` ({token: logprob}), with top_logprobs."""
    ranked = sorted(top.items(), key=lambda kv: kv[1], reverse=True)
    first, first_lp = ranked[0]
    entry = _token_logprob(first, first_lp)
    entry["top_logprobs"] = [_token_logprob(t, lp) for t, lp in ranked]
    return Reply(body=completion(first, {"content": [entry]}), **reply)


def probs_reply(probs: Mapping[str, float], **reply: Any) -> Reply:
    """Like logprobs_reply, from probabilities."""
    return logprobs_reply({t: math.log(p) for t, p in probs.items()}, **reply)


def text_reply(text: str, **reply: Any) -> Reply:
    """An answer without logprobs (as servers that do not support them send)."""
    return Reply(body=completion(text, None), **reply)


def json_reply(obj: Any, **reply: Any) -> Reply:
    """An answer whose content is a JSON document (for `response_format` callers)."""
    return Reply(body=completion(json.dumps(obj), None), **reply)


def error_reply(status: int, message: str = "scripted error", **reply: Any) -> Reply:
    body = {"error": {"message": message, "type": "fake_error", "code": str(status)}}
    return Reply(status=status, body=body, **reply)


def hash_vector(text: str, dim: int = EMBED_DIM) -> list[float]:
    """A deterministic unit vector from the text's hash: equal texts, equal vectors."""
    seed = hashlib.sha256(text.encode("utf-8")).digest()
    raw: list[float] = []
    counter = 0
    while len(raw) < dim:
        block = hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        raw.extend((b - 127.5) / 127.5 for b in block)
        counter += 1
    raw = raw[:dim]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _no_script(body: Any) -> Reply:
    return error_reply(500, "fake server: no reply scripted for this request")


@dataclass
class FakeOpenAI:
    """The server's state; the HTTP server and its thread are started by `start()`."""

    api_key: str | None = None  # when set, other keys get a 401 like the real API
    on_chat: Callable[[Any], Reply] = _no_script
    on_embeddings: Callable[[Sequence[str]], list[list[float]]] = field(
        default=lambda texts: [hash_vector(t) for t in texts])
    requests: list[Recorded] = field(default_factory=list)
    _queue: deque = field(default_factory=deque)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        """Queue replies for the next chat requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def url(self) -> str:
        """The base_url a client uses (ends in /v1)."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    # -- life ------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True  # a hanging handler must not block the close
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # releases hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering (called from handler threads) -------------------------------------------
    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    def _next_chat(self, body: Any) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self.on_chat(body)

    def _embeddings(self, body: Any) -> Reply:
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list):
            return error_reply(400, "input must be a string or a list of strings")
        vectors = self.on_embeddings(texts)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        model = body.get("model") or FAKE_MODEL
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return Reply(body={"object": "list", "data": data, "model": model, "usage": usage})

    def _authorised(self, headers: Mapping[str, str]) -> bool:
        return self.api_key is None or headers.get("authorization") == f"Bearer {self.api_key}"

    def answer(self, method: str, path: str, body: Any, headers: Mapping[str, str]) -> Reply:
        if not self._authorised(headers):
            return error_reply(401, "Incorrect API key provided")
        if method == "GET" and path.endswith("/models"):
            return Reply(body={"object": "list", "data": [{"id": FAKE_MODEL, "object": "model"}]})
        if method == "POST" and path.endswith("/chat/completions"):
            return self._next_chat(body)
        if method == "POST" and path.endswith("/embeddings"):
            return self._embeddings(body)
        return error_reply(404, f"no route {method} {path}")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read `fake.requests`, not stderr

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return raw

    def _serve(self, method: str) -> None:
        body = self._read_body() if method == "POST" else None
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake._record(Recorded(method, self.path, headers, body))
        reply = self.fake.answer(method, self.path, body, headers)
        if reply.hang:
            self.fake._stop.wait()
            return
        if reply.delay_s and self.fake._stop.wait(reply.delay_s):
            return
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its deadline passed): nothing to tell it

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")
