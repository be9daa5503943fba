"""Stand-ins for the typed decision APIs on 127.0.0.1: System One (`POST /v1/systemone`,
`GET /v1/models`) and OpenAI Decisions (`POST /v1/decisions`). The latency benchmark runs
memsift against them (`memsift bench --fanout`) and the tests drive memsift and the official
clients against them.

Each validates every request against its API's documented schema (question types, fields,
limits: 1-255 choice options, 2-10 score levels, 1-400 OpenAI questions, the token limits of a
state) and answers a bad one as the API does: System One a 422 with its `detail` list (a 400
with a `detail` map for an unknown model), OpenAI a 400 with its `error` object. Good ones get
scripted probabilities after a scripted latency; `faults` queues the failures a real server
has: an error status (401, 422, 429 with Retry-After, 529, 500), a hang, a reply cut
mid-body, a refusal (OpenAI).

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
SYSTEMONE_MODELS = ("jev-latest", "jev-preview", "jev-1.13.0", "typesafe/jev-1.13")
OPENAI_MODEL = "gpt-6-luna"
MAX_OPTIONS = 255  # System One and OpenAI: a 256th option is rejected
MAX_LEVELS = 10  # System One: 11 score levels are rejected
MAX_OPENAI_QUESTIONS = 400
STATE_TOKENS, REQUEST_TOKENS = 32_768, 65_536  # state + longest question; the whole request
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
    state = _state_object(state)
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


def _state_object(state: Any) -> Any:
    """OpenAI's input as memsift sends it: the state is the last message's JSON."""
    if isinstance(state, list) and state and isinstance(state[-1], dict):
        try:
            return json.loads(state[-1].get("content", ""))
        except (TypeError, ValueError):
            return state
    return state


def _tokens(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False)) // CHARS_PER_TOKEN if value is not None \
        else 0


class Invalid(Exception):
    """A request the API rejects: where (loc), why (msg), a machine code (type)."""

    def __init__(self, loc: list, msg: str, kind: str = "value_error") -> None:
        super().__init__(msg)
        self.loc, self.msg, self.kind = loc, msg, kind


def _content(value: Any, loc: list, *, optional: bool = True) -> None:
    """Text, an object or an array (System One's content); None where optional."""
    if value is None and optional:
        return
    if not isinstance(value, (str, dict, list)):
        raise Invalid(loc, "Input should be a valid string, object or array", "type_error")


def _fields(obj: dict, allowed: set[str], loc: list) -> None:
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
            state = _state_object(self.state_of(seen.body))
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


class SystemOneServer(DecisionServer):
    """System One as TypeSafe documents it (typesafe-sdk's schemas, generated from the API's
    OpenAPI document)."""

    path = "/v1/systemone"
    request_id_header = "x-typesafe-request-id"

    @property
    def url(self) -> str:
        """The base_url a client uses: without the version (the client adds /v1/systemone)."""
        return self.origin

    def state_of(self, body: Any) -> Any:
        return body.get("state") if isinstance(body, dict) else None

    def route(self, method, path, body, headers, fault):
        if not self.authorised(headers):
            return 401, {"detail": "Invalid or missing API key"}
        if method == "GET" and path.rstrip("/").endswith("/v1/models"):
            return 200, {"models": [{"name": m, "description": "A system one model.",
                                     "release_date": "2026-09-15"} for m in SYSTEMONE_MODELS]}
        if method != "POST" or not path.rstrip("/").endswith(self.path):
            return 404, {"detail": "Not Found"}
        if fault is not None and not fault.refuse:
            return fault.status, fault.body if fault.body is not None else {"detail": "scripted"}
        if isinstance(body, dict) and isinstance(body.get("model"), str) \
                and body["model"] not in SYSTEMONE_MODELS:
            return 400, {"detail": {"error_type": "invalid_request",
                                    "message": f"Unknown model: {body['model']}"}}
        try:
            validate_systemone(body)
        except Invalid as exc:
            return 422, {"detail": [{"loc": ["body", *exc.loc], "msg": exc.msg,
                                     "type": exc.kind}]}
        return 200, self._answer(body)

    def _answer(self, body: dict) -> dict:
        answers, options_count = {}, 0
        for name, q in body["questions"].items():
            kind = q["type"]
            instructions = q.get("instructions") if isinstance(q.get("instructions"), str) else ""
            if kind == "choice":
                labels = list(q["criteria"])
                probs = self.decide("choice", instructions, labels, body["state"])
                best = max(range(len(labels)), key=probs.__getitem__)
                answers[name] = {"type": "choice", "choice": labels[best],
                                 "confidence": probs[best],
                                 "probabilities": dict(zip(labels, probs))}
                options_count += len(labels)
            elif kind == "noul":
                answers[name] = {"type": "noul",
                                 "noul": self.decide("yes", instructions, [True, False],
                                                     body["state"])[0]}
            elif kind == "score":
                levels = list(q["criteria"])
                probs = self.decide("score", instructions, levels, body["state"])
                answers[name] = {"type": "score",
                                 "score": sum(i * p for i, p in enumerate(probs)),
                                 "confidence": max(probs),
                                 "legend": {str(i): c for i, c in enumerate(levels)},
                                 "probabilities": {str(i): p for i, p in enumerate(probs)}}
            else:
                answers[name] = {"type": "box", "confidence": None,
                                 "box": {"top": 0.2, "bottom": 0.6, "left": 0.2, "right": 0.6}}
        questions = len(body["questions"])
        tokens = FIXED_TOKENS + QUESTION_TOKENS * questions + OPTION_TOKENS * options_count \
            + _tokens(body["state"])
        return {"model": "jev-1.13.0" if body["model"] != "typesafe/jev-1.13" else body["model"],
                "answers": answers, "usage": {"input_tokens": tokens, "output_tokens": questions}}


def validate_systemone(body: Any) -> None:
    """Raise Invalid for anything POST /v1/systemone rejects."""
    if not isinstance(body, dict):
        raise Invalid([], "Input should be a valid dictionary", "model_attributes_type")
    _fields(body, {"model", "state", "questions", "assets"}, [])
    for required in ("model", "state", "questions"):
        if required not in body:
            raise Invalid([required], "Field required", "missing")
    if not isinstance(body["model"], str):
        raise Invalid(["model"], "Input should be a valid string", "string_type")
    if not isinstance(body["state"], (str, dict, list)):
        raise Invalid(["state"], "Input should be a valid string, object or array", "type_error")
    questions = body["questions"]
    if not isinstance(questions, dict) or not questions:
        raise Invalid(["questions"], "Dictionary should have at least 1 item", "too_short")
    assets = body.get("assets")
    if assets is not None and (not isinstance(assets, dict) or not assets):
        raise Invalid(["assets"], "Dictionary should have at least 1 item", "too_short")
    longest = 0
    for name, q in questions.items():
        _question_systemone(q, ["questions", name], bool(assets))
        longest = max(longest, _tokens(q))
    state_tokens = _tokens(body["state"])
    if state_tokens + longest > STATE_TOKENS:
        raise Invalid(["state"], f"state and the longest question exceed {STATE_TOKENS} tokens")
    if state_tokens + sum(_tokens(q) for q in questions.values()) > REQUEST_TOKENS:
        raise Invalid(["questions"], f"the request exceeds {REQUEST_TOKENS} tokens")


def _question_systemone(q: Any, loc: list, has_assets: bool) -> None:
    if not isinstance(q, dict):
        raise Invalid(loc, "Input should be a valid dictionary", "model_attributes_type")
    kind = q.get("type")
    if kind not in ("noul", "choice", "score", "box"):
        raise Invalid(loc + ["type"], "Input tag does not match any of the expected tags: "
                      "'noul', 'choice', 'score', 'box'", "union_tag_invalid")
    loc = loc + [kind]
    allowed = {"type", "instructions"} | ({"criteria"} if kind != "box" else set())
    _fields(q, allowed, loc)
    _content(q.get("instructions"), loc + ["instructions"])
    criteria = q.get("criteria")
    if kind == "noul":
        if criteria is not None:
            if not isinstance(criteria, dict):
                raise Invalid(loc + ["criteria"], "Input should be a valid dictionary")
            _fields(criteria, {"true", "false"}, loc + ["criteria"])
            for side in ("true", "false"):
                _content(criteria.get(side), loc + ["criteria", side])
        described = isinstance(criteria, dict) and any(criteria.get(s) for s in ("true", "false"))
        if q.get("instructions") is None and not described:
            raise Invalid(loc, "A noul needs instructions or a described outcome")
    elif kind == "choice":
        if not isinstance(criteria, dict) or not criteria:
            raise Invalid(loc + ["criteria"], "Dictionary should have at least 1 item",
                          "too_short")
        if len(criteria) > MAX_OPTIONS:
            raise Invalid(loc + ["criteria"], f"at most {MAX_OPTIONS} options", "too_long")
        for label, description in criteria.items():
            _content(description, loc + ["criteria", label])
    elif kind == "score":
        if not isinstance(criteria, list) or not criteria:
            raise Invalid(loc + ["criteria"], "List should have at least 1 item", "too_short")
        if len(criteria) > MAX_LEVELS:
            raise Invalid(loc + ["criteria"], f"at most {MAX_LEVELS} levels", "too_long")
        for i, level in enumerate(criteria):
            _content(level, loc + ["criteria", i], optional=False)
    elif not has_assets:
        raise Invalid(loc, "A box question needs an image asset")


class OpenAIDecisionsServer(DecisionServer):
    """OpenAI Decisions as the `openai` client's types describe it."""

    path = "/v1/decisions"
    request_id_header = "x-request-id"

    @property
    def url(self) -> str:
        """The base_url a client uses: with the version (the client adds /decisions)."""
        return self.origin + "/v1"

    def state_of(self, body: Any) -> Any:
        return body.get("input") if isinstance(body, dict) else None

    def route(self, method, path, body, headers, fault):
        if not self.authorised(headers):
            return 401, _openai_error("Incorrect API key provided", "invalid_api_key")
        if method != "POST" or not path.rstrip("/").endswith(self.path):
            return 404, _openai_error(f"Unknown route {method} {path}", "unknown_url")
        if fault is not None and not fault.refuse:
            return fault.status, fault.body if fault.body is not None else \
                _openai_error("scripted", "server_error")
        try:
            validate_openai(body)
        except Invalid as exc:
            param = ".".join(str(p) for p in exc.loc)
            return 400, _openai_error(exc.msg, exc.kind, param)
        return 200, self._answer(body, refuse=fault is not None)

    def _answer(self, body: dict, *, refuse: bool) -> dict:
        answers = []
        for i, q in enumerate(body["questions"]):
            name = q.get("name")
            instructions = q["instructions"] if isinstance(q["instructions"], str) else ""
            if refuse and i == len(body["questions"]) - 1:
                answers.append({"type": "refusal", "name": name})
            elif q["type"] == "predicate":
                p = self.decide("yes", instructions, [True, False], body["input"])[0]
                answers.append({"type": "predicate", "name": name, "probability": p})
            elif q["type"] == "choice":
                values = [c["value"] for c in q["choices"]]
                probs = self.decide("choice", instructions, values, body["input"])
                best = max(range(len(values)), key=probs.__getitem__)
                answers.append({"type": "choice", "name": name, "choice": values[best],
                                "confidence": probs[best],
                                "probabilities": [{"value": v, "probability": p}
                                                  for v, p in zip(values, probs)]})
            else:
                labels = [level["label"] for level in q["levels"]]
                probs = self.decide("score", instructions, labels, body["input"])
                answers.append({"type": "score", "name": name, "confidence": max(probs),
                                "score": sum(i * p for i, p in enumerate(probs)),
                                "probabilities": [{"value": i, "label": label, "probability": p}
                                                  for i, (label, p) in enumerate(zip(labels,
                                                                                     probs))]})
        tokens = FIXED_TOKENS + _tokens(body["input"]) + _tokens(body["questions"])
        return {"answers": answers, "model": "gpt-6-luna-2026-10-06",
                "usage": {"input_tokens": tokens, "output_tokens": len(answers),
                          "total_tokens": tokens + len(answers),
                          "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}


def _openai_error(message: str, code: str, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": code}}


MESSAGE_ROLES = ("user", "developer", "system", "assistant")


def validate_openai(body: Any) -> None:
    """Raise Invalid for anything POST /v1/decisions rejects."""
    if not isinstance(body, dict):
        raise Invalid([], "The body must be a JSON object", "invalid_type")
    _fields(body, {"model", "input", "questions", "prompt_cache_key", "prompt_cache_options",
                   "safety_identifier"}, [])
    for required in ("model", "input", "questions"):
        if required not in body:
            raise Invalid([required], f"Missing required parameter: '{required}'",
                          "missing_required_parameter")
    if body["model"] != OPENAI_MODEL:
        raise Invalid(["model"], f"The model '{body['model']}' does not exist",
                      "model_not_found")
    _input_openai(body["input"])
    questions = body["questions"]
    if not isinstance(questions, list) or not 1 <= len(questions) <= MAX_OPENAI_QUESTIONS:
        raise Invalid(["questions"], f"Provide 1 to {MAX_OPENAI_QUESTIONS} questions",
                      "invalid_value")
    for i, q in enumerate(questions):
        _question_openai(q, ["questions", i])


def _input_openai(value: Any) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, list) or not value:
        raise Invalid(["input"], "input must be a string or a list of messages", "invalid_type")
    for i, message in enumerate(value):
        loc = ["input", i]
        if not isinstance(message, dict):
            raise Invalid(loc, "Each input item must be an object", "invalid_type")
        if message.get("type") not in (None, "message"):
            continue  # function calls and their outputs: memsift sends none
        _fields(message, {"role", "content", "type", "phase"}, loc)
        if message.get("role") not in MESSAGE_ROLES:
            raise Invalid(loc + ["role"], f"role must be one of {', '.join(MESSAGE_ROLES)}",
                          "invalid_value")
        if not isinstance(message.get("content"), (str, list)):
            raise Invalid(loc + ["content"], "content must be a string or a list of parts",
                          "invalid_type")


def _question_openai(q: Any, loc: list) -> None:
    if not isinstance(q, dict):
        raise Invalid(loc, "Each question must be an object", "invalid_type")
    kind = q.get("type")
    extra = {"predicate": set(), "choice": {"choices"}, "score": {"levels"}}.get(kind)
    if extra is None:
        raise Invalid(loc + ["type"], "type must be predicate, choice or score",
                      "invalid_value")
    _fields(q, {"type", "name", "instructions"} | extra, loc)
    if not isinstance(q.get("instructions"), (str, list)) or not q["instructions"]:
        raise Invalid(loc + ["instructions"], "Missing required parameter: 'instructions'",
                      "missing_required_parameter")
    if "name" in q and not isinstance(q["name"], str):
        raise Invalid(loc + ["name"], "name must be a string", "invalid_type")
    if kind == "choice":
        choices = q.get("choices")
        if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_OPTIONS:
            raise Invalid(loc + ["choices"], f"Provide between 2 and {MAX_OPTIONS} choices",
                          "invalid_value")
        seen = set()
        for i, choice in enumerate(choices):
            if not isinstance(choice, dict) or not isinstance(choice.get("value"), (str, bool)):
                raise Invalid(loc + ["choices", i, "value"], "value must be a string or boolean",
                              "invalid_type")
            _fields(choice, {"value", "description"}, loc + ["choices", i])
            key = (type(choice["value"]), choice["value"])
            if key in seen:
                raise Invalid(loc + ["choices", i], "Each choice must be unique",
                              "invalid_value")
            seen.add(key)
    elif kind == "score":
        levels = q.get("levels")
        if not isinstance(levels, list) or not 2 <= len(levels) <= MAX_LEVELS:
            raise Invalid(loc + ["levels"], f"Provide between 2 and {MAX_LEVELS} levels",
                          "invalid_value")
        for i, level in enumerate(levels):
            if not isinstance(level, dict) or not isinstance(level.get("label"), str):
                raise Invalid(loc + ["levels", i, "label"], "label must be a string",
                              "invalid_type")
            _fields(level, {"label", "description"}, loc + ["levels", i])


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
