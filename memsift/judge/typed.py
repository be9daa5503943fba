"""The decision model on a typed decision API (System One, OpenAI Decisions), over plain httpx.

A typed API answers questions (a choice, a yes/no) with probabilities and no text, so each of
the cascade's questions is one request: the kind as a choice over the eleven kinds (with the
worth-keeping yes/no beside it, one round trip for both), and each note or passage judged
alone, its own request whose state holds the message, the last turns and that one item (packed
together, items blur each other's scores). The items' requests go out at once, one thread
each, over one connection pool: a step waits one round trip, not one per item.

On the prompt path: one attempt, the step's deadline as the hard timeout, and no SDK (the
official clients cost 0.25 s to 1.6 s of imports and retry for up to 30 s). The server's
errors become JudgeError reasons the services' health acts on (docs/decision-model.md).

The backends (systemone.py, openai_decisions.py) say only how a question and a state go on
their wire and how an answer comes back; everything else is here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Self

from memsift.clock import Deadline
from memsift.httppool import Pool, httpx
from memsift.judge.base import KIND_DESCRIPTIONS, KINDS, JudgeError
from memsift.redact import redact_text

MAX_PARALLEL = 16  # the cascade judges up to 16 passages at once: one thread each
# Connections of the one pool: the notes (12) and the passages (16) are judged at the same
# time, beside the kind question; a request waiting for a connection waits a round trip.
MAX_CONNECTIONS = 32
MIN_CALL_S = 0.05  # with less time left than this a request cannot come back: do not send it
LAST_TURNS = 4  # turns before the message in each state: what "it" and "that" refer to
TURN_CHARS = 1_500  # of each turn, its end: the part the message follows from
ITEM_CHARS = 4_000  # a note or passage longer than this is cut; its start says what it is
MESSAGE_CHARS = 8_000  # far under the APIs' 32k-token state limit, with the turns beside it
MAX_RETRY_AFTER_S = 3_600.0  # a server asking for longer is paused an hour, then probed
AUTH_STATUSES = (401, 403)  # the key is missing, wrong or not allowed this model
REJECTED_STATUSES = (400, 404, 422)  # a request of ours the server will not take: no outage
RATE_LIMITED, OVERLOADED = 429, 529

KIND_INSTRUCTIONS = "What kind of message did the user just send to their coding assistant?"
ITEM_INSTRUCTIONS = (
    "Does `item` answer the user's `message`, or hold a fact, choice, reason or step that "
    "the message needs? Earlier turns only say what the message refers to."
)
ITEM_TRUE = "The item answers the message or holds something the message needs."
ITEM_FALSE = "The item is about something else, or only shares words with the message."
WORTH_INSTRUCTIONS = (
    "Is this worth remembering in later sessions of the project: a choice and its reason, "
    "a constraint, a problem and its fix, or a procedure?"
)
WORTH_TRUE = "A choice and its reason, a constraint, a problem and its fix, or a procedure."
WORTH_FALSE = "A reaction, a one-off task, general knowledge, or small talk."
KIND, WORTH, ITEM, CHOICE = "kind", "worth", "item", "choice"  # the questions' names


@dataclass(frozen=True)
class Question:
    """One question in neutral form; a backend writes it on its wire.

    `options` (a choice) maps each label to its description or None; a yes/no question has
    none, and `true`/`false` describe its outcomes."""

    name: str
    instructions: str
    options: Mapping[str, str | None] | None = None
    true: str = ""
    false: str = ""

    @property
    def is_choice(self) -> bool:
        return self.options is not None


@dataclass
class Usage:
    """What this judge's requests cost: the audit line and `memsift status` read it. A
    request counts when sent (an answer the prompt no longer waits for is still billed);
    tokens and ids come with the answers."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    request_ids: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sent(self) -> None:
        with self._lock:
            self.requests += 1

    def add(self, data: Mapping[str, Any], request_id: str) -> None:
        usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
        with self._lock:
            self.input_tokens += _int(usage.get("input_tokens"))
            self.output_tokens += _int(usage.get("output_tokens"))
            if request_id:
                self.request_ids.append(request_id)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms, else Retry-After (seconds or an
    HTTP date); None when it did not say."""
    try:
        if headers.get("retry-after-ms"):
            return min(float(headers["retry-after-ms"]) / 1000.0, MAX_RETRY_AFTER_S)
        value = headers.get("retry-after", "").strip()
        if not value:
            return None
        if value.replace(".", "", 1).isdigit():
            return min(float(value), MAX_RETRY_AFTER_S)
        from memsift.clock import now

        wait = (parsedate_to_datetime(value) - now()).total_seconds()
        return min(max(0.0, wait), MAX_RETRY_AFTER_S)
    except (TypeError, ValueError, OverflowError):
        return None


def error_detail(response: httpx.Response) -> str:
    """The server's own words about a rejected request: a 422's `detail` list
    ({loc, msg}), a 400's `detail` map, an OpenAI `error.message`; else the body's start."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):
        parts = [f"{'.'.join(str(p) for p in d.get('loc', []))}: {d.get('msg', '')}"
                 for d in detail if isinstance(d, dict)]
        return "; ".join(parts)[:300]
    if isinstance(detail, dict):
        return str(detail.get("message") or detail)[:300]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:300]
    return json.dumps(body)[:300] if body is not None else ""


class DecisionHTTP:
    """POST one request with httpx; one client (one connection pool) per judge."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, *,
                 request_id_header: str, transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url
        self.request_id_header = request_id_header
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        limits = httpx.Limits(max_connections=MAX_CONNECTIONS,
                              max_keepalive_connections=MAX_CONNECTIONS)
        # A plain-http server (llama-server on this machine) never uses TLS, and loading the
        # CA bundle for it costs ~30 ms of CPU before the first request; redirects are not
        # followed, so no request of this client leaves that server.
        plain = base_url.lower().startswith("http://")
        try:
            self._client = Pool(base_url=base_url, headers=headers, limits=limits,
                                timeout=httpx.Timeout(timeout_s), transport=transport,
                                verify=not plain)
        except httpx.InvalidURL as exc:
            raise JudgeError(f"judge.base_url {base_url!r} is not a URL", "config") from exc

    def post(self, path: str, body: Mapping[str, Any], timeout_s: float) -> tuple[dict, str]:
        """The reply's JSON object and its request id, or a JudgeError with its reason."""
        response = self._send(path, body, timeout_s)
        request_id = response.headers.get(self.request_id_header, "")
        self._check(response, request_id)
        try:
            data = response.json()
        except ValueError as exc:  # not JSON, or not UTF-8
            raise JudgeError(f"unreadable reply from {self.base_url}", "bad_reply") from exc
        if not isinstance(data, dict):
            raise JudgeError(f"unreadable reply from {self.base_url}", "bad_reply")
        return data, request_id

    def close(self) -> None:
        self._client.close()

    def _send(self, path: str, body: Mapping[str, Any], timeout_s: float) -> httpx.Response:
        try:
            return self._client.post(path, json=body, timeout=httpx.Timeout(timeout_s))
        except httpx.TimeoutException as exc:
            raise JudgeError(
                f"no answer from {self.base_url} within {timeout_s:.2f}s", "timeout") from exc
        except httpx.RemoteProtocolError as exc:  # a reply cut mid-body: the server broke
            raise JudgeError(f"{self.base_url} cut its reply short", "server") from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise JudgeError(f"cannot reach {self.base_url}", "refused") from exc

    def _check(self, response: httpx.Response, request_id: str) -> None:
        status = response.status_code
        if response.is_success:
            return
        where = f"{self.base_url} answered {status}" + (f" ({request_id})" if request_id else "")
        if status in AUTH_STATUSES:
            raise JudgeError(f"{self.base_url} refused the key ({status})", "auth")
        if status in REJECTED_STATUSES:
            raise JudgeError(f"{where}: {error_detail(response)}", "rejected")
        if status in (RATE_LIMITED, OVERLOADED):
            reason = "rate_limited" if status == RATE_LIMITED else "overloaded"
            raise JudgeError(where, reason, retry_after_s=retry_after(response.headers))
        raise JudgeError(where, "server")


def clip(text: str, limit: int) -> str:
    """Secrets out (the text leaves the machine), cut to `limit` characters."""
    clean = redact_text(text)
    return clean if len(clean) <= limit else clean[:limit] + " …"


class TypedJudge:
    """The Judge protocol over a typed decision API. Subclasses set `name`, `path`,
    `request_id_header`, `default_threshold` and write requests and read answers."""

    name = "typed"
    path = ""
    request_id_header = "x-request-id"
    default_threshold = 0.5
    keep_threshold = 0.5  # the session-end keep decision: the model's own even odds
    price_per_mtok = 0.0  # USD per million input tokens, from the model's stated price

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 1.5,
                 *, threshold: float | None = None, price_per_mtok: float | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not base_url or not model:
            raise JudgeError(f"{self.name} needs judge.base_url and judge.model", "config")
        self.base_url = base_url
        self.model = model
        self.timeout_s = float(timeout_s)
        self.threshold = self.default_threshold if threshold is None else float(threshold)
        if price_per_mtok is not None:
            self.price_per_mtok = float(price_per_mtok)
        self.usage = Usage()
        self.turns: list[dict[str, str]] = []
        self._http = DecisionHTTP(base_url, api_key, self.timeout_s,
                                  request_id_header=self.request_id_header, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_turns(self, turns: Sequence[tuple[str, str]]) -> None:
        """The conversation before the message, (role, text) oldest first: the last few go
        into every state, so the model reads the message as the agent does."""
        self.turns = [{"role": role, "text": clip(text[-TURN_CHARS:], TURN_CHARS)}
                      for role, text in list(turns)[-LAST_TURNS:]]

    # -- the Judge protocol ----------------------------------------------------------------
    def kind(self, message: str, deadline: Deadline | None = None) -> dict[str, float]:
        return self.kind_and_worth(message, deadline, worth=False)[0]

    def kind_and_worth(self, message: str, deadline: Deadline | None = None, *,
                       worth: bool = True) -> tuple[dict[str, float], float | None]:
        """The kind and, in the same request, whether the message is worth a search."""
        questions = [Question(KIND, KIND_INSTRUCTIONS, dict(KIND_DESCRIPTIONS))]
        if worth:
            questions.append(Question(WORTH, WORTH_INSTRUCTIONS, true=WORTH_TRUE,
                                      false=WORTH_FALSE))
        answers = self._ask(self._state(message), questions, deadline)
        kinds = {k: float(answers[KIND].get(k, 0.0)) for k in KINDS}
        return kinds, (float(answers[WORTH]) if worth else None)

    def score(self, message: str, items: Sequence[str],
              deadline: Deadline | None = None) -> list[float]:
        """Each item alone, all at once. An item whose request failed scores 0 (it is never
        added); when every request failed, the first error is raised."""
        if not items:
            return []
        question = [Question(ITEM, ITEM_INSTRUCTIONS, true=ITEM_TRUE, false=ITEM_FALSE)]

        def one(item: str) -> float | JudgeError:
            state = self._state(message, item=clip(item, ITEM_CHARS))
            try:
                return float(self._ask(state, question, deadline)[ITEM])
            except JudgeError as exc:
                return exc

        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(items))) as pool:
            answers = list(pool.map(one, items))
        failures = [a for a in answers if isinstance(a, JudgeError)]
        if len(failures) == len(answers):
            raise failures[0]
        return [0.0 if isinstance(a, JudgeError) else a for a in answers]

    def worth_keeping(self, text: str, deadline: Deadline | None = None) -> float:
        question = Question(WORTH, WORTH_INSTRUCTIONS, true=WORTH_TRUE, false=WORTH_FALSE)
        return float(self._ask({"text": clip(text, MESSAGE_CHARS)}, [question], deadline)[WORTH])

    def choose(self, question: str, options: Sequence[str], context: str,
               deadline: Deadline | None = None) -> dict[str, float]:
        asked = Question(CHOICE, question, {o: None for o in options})
        answer = self._ask({"text": clip(context, MESSAGE_CHARS)}, [asked], deadline)[CHOICE]
        return {o: float(answer.get(o, 0.0)) for o in options}

    # -- one request -----------------------------------------------------------------------
    def _state(self, message: str, **extra: str) -> dict[str, Any]:
        state: dict[str, Any] = {"message": clip(message, MESSAGE_CHARS)}
        if self.turns:
            state["last_turns"] = self.turns
        state.update(extra)
        return state

    def _ask(self, state: dict[str, Any], questions: Sequence[Question],
             deadline: Deadline | None) -> dict[str, Any]:
        """{question name: {label: p} for a choice, P(yes) for a yes/no}."""
        body, timeout_s = self.request(state, questions), self._call_timeout(deadline)
        self.usage.sent()
        data, request_id = self._http.post(self.path, body, timeout_s)
        self.usage.add(data, request_id)
        try:
            return self.answers(data, questions)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
            raise JudgeError(f"unreadable answer from {self.base_url}", "bad_reply") from exc

    def _call_timeout(self, deadline: Deadline | None) -> float:
        seconds = self.timeout_s if deadline is None else min(self.timeout_s, deadline.remaining())
        if seconds < MIN_CALL_S:
            raise JudgeError("no time left to ask the model", "timeout")
        return seconds

    # -- the wire, per backend -------------------------------------------------------------
    def request(self, state: dict[str, Any], questions: Sequence[Question]) -> dict[str, Any]:
        raise NotImplementedError

    def answers(self, data: Mapping[str, Any], questions: Sequence[Question]) -> dict[str, Any]:
        raise NotImplementedError


def probability(value: Any) -> float:
    """A probability from the wire: a number in 0..1, else the answer is unreadable."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"not a probability: {value!r}")
    return float(value)
