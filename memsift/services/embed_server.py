"""memsift's own model server for Cognee, on loopback, OpenAI-compatible.

`POST /v1/embeddings` serves memsift's offline embedding model (memsift.model.embed), so a Cognee
server gets real vectors with no key and no download.

`POST /v1/chat/completions` exists for the offline mode only, when no language model is
configured: Cognee's cognify asks a model for a knowledge graph and a summary of every chunk,
and without those answers it never stores the chunk embeddings that CHUNKS search reads. This
endpoint answers honestly with no model: an EMPTY knowledge graph and an extractive summary
(the chunk's first sentence). Chunks and their vectors are then real; the graph is empty, so
Cognee's graph search types have nothing to walk (docs/cognee.md).

Run it by hand: `python -m memsift.services.embed_server --port 8765`.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

MAX_BODY_BYTES = 32 * 1024 * 1024  # a cognify batch of chunks; anything larger is a mistake
MAX_INPUTS = 2048  # OpenAI's own limit on inputs per embeddings request
SUMMARY_CHARS = 300  # an extractive summary is the chunk's opening, never the whole chunk
OFFLINE_MODEL = "memsift-offline"  # the name the chat endpoint answers as: no language model

EmbedFn = Callable[[Sequence[str]], Any]


class RequestError(Exception):
    """A request the server refuses with 400 and an OpenAI-shaped error body."""


# --- embeddings -------------------------------------------------------------------------------


def _inputs(body: dict) -> list[str]:
    raw = body.get("input")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise RequestError("input must be a string or a non-empty list of strings")
    if len(raw) > MAX_INPUTS:
        raise RequestError(f"at most {MAX_INPUTS} inputs per request")
    if not all(isinstance(item, str) for item in raw):
        raise RequestError("only text inputs are supported (no token arrays)")
    return raw


def embeddings_reply(body: dict, embed_fn: EmbedFn, model_id: str, dim: int) -> dict:
    texts = _inputs(body)
    wanted = body.get("dimensions")
    if wanted is not None and wanted != dim:
        raise RequestError(f"this model has {dim} dimensions, not {wanted}")
    vectors = embed_fn(texts)
    data = [
        {"object": "embedding", "index": i, "embedding": [float(x) for x in row]}
        for i, row in enumerate(vectors)
    ]
    tokens = sum(len(t.split()) for t in texts)  # an estimate: usage is informational only
    return {"object": "list", "data": data, "model": model_id,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


# --- offline chat: minimal valid structured output -------------------------------------------


def _user_text(messages: list) -> str:
    parts = []
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            parts.append(str(content or ""))
    return "\n".join(parts)


def extractive_summary(text: str) -> str:
    """The first sentence of the text, whitespace folded and capped: no model, no invention."""
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    sentence = match.group(1) if match else flat
    return sentence[:SUMMARY_CHARS]


def _resolve(schema: dict, defs: dict) -> dict:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        name = ref.rsplit("/", 1)[-1]
        return _resolve(defs.get(name, {}), defs)
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if options:
            plain = [o for o in options if o.get("type") != "null"] or options
            return _resolve(plain[0], defs)
    return schema


def minimal_instance(schema: dict, defs: dict, text: str) -> Any:
    """The smallest value valid under a JSON schema: empty lists, no optional fields, and the
    extractive summary wherever a string is required. A knowledge graph comes out empty."""
    schema = _resolve(schema, defs)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: minimal_instance(props.get(name, {}), defs, text)
                for name in schema.get("required", [])}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return extractive_summary(text)


_FENCED_JSON = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def _schema_in_messages(messages: list) -> dict:
    """JSON mode puts the schema in the prompt (Cognee's native adapter: a fenced block in
    the system message); the last fenced object with properties is the one to answer."""
    for message in reversed(messages or []):
        content = message.get("content") if isinstance(message, dict) else None
        for block in reversed(_FENCED_JSON.findall(content if isinstance(content, str) else "")):
            try:
                schema = json.loads(block)
            except ValueError:
                continue
            if isinstance(schema, dict) and "properties" in schema:
                return schema
    return {"type": "object"}


def _with_defs(schema: dict) -> tuple[dict, dict]:
    return schema, schema.get("$defs") or schema.get("definitions") or {}


def _response_schema(body: dict) -> tuple[dict, dict] | None:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return _with_defs((fmt.get("json_schema") or {}).get("schema") or {})
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return _with_defs(_schema_in_messages(body.get("messages", [])))
    tools = body.get("tools")
    if tools:  # instructor's tools mode: answer with the first tool's arguments
        return _with_defs(tools[0].get("function", {}).get("parameters") or {})
    return None


def chat_reply(body: dict) -> dict:
    text = _user_text(body.get("messages", []))
    found = _response_schema(body)
    message: dict[str, Any] = {"role": "assistant"}
    if found is None:
        message["content"] = extractive_summary(text)
    elif body.get("tools"):
        schema, defs = found
        name = body["tools"][0].get("function", {}).get("name", "answer")
        args = json.dumps(minimal_instance(schema, defs, text))
        message["content"] = None
        message["tool_calls"] = [{"id": "call_offline", "type": "function",
                                  "function": {"name": name, "arguments": args}}]
    else:
        schema, defs = found
        message["content"] = json.dumps(minimal_instance(schema, defs, text))
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": "chatcmpl-offline", "object": "chat.completion", "created": int(time.time()),
            "model": OFFLINE_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


# --- the HTTP server ---------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"  # keep-alive: Cognee sends many small requests

    def log_message(self, format: str, *args: object) -> None:  # quiet; errors are replies
        pass

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", "/v1/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.model_id,
                                                         "object": "model"}]})
        else:
            self._error(404, f"no route {self.path}")

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise RequestError("request too large")
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            raise RequestError(f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise RequestError("body must be a JSON object")
        return body

    def do_POST(self) -> None:
        route = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._body()
            if route.endswith("/embeddings"):
                self._send(200, embeddings_reply(body, self.server.embed_fn,
                                                 self.server.model_id, self.server.dim))
            elif route.endswith("/chat/completions") and self.server.offline_chat:
                self._send(200, chat_reply(body))
            else:
                self._error(404, f"no route {self.path}")
        except RequestError as exc:
            self._error(400, str(exc))
        except Exception as exc:  # noqa: BLE001  a broken request must not kill the server
            self._error(500, f"{type(exc).__name__}: {exc}")


class ModelServer(ThreadingHTTPServer):
    """The loopback model server. `with ModelServer() as server:` runs it in a thread."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 embed_fn: EmbedFn | None = None, model_id: str | None = None,
                 dim: int | None = None, offline_chat: bool = True) -> None:
        super().__init__((host, port), _Handler)
        if embed_fn is None:
            from memsift.model import embed as model
            embed_fn, model_id, dim = model.embed, model_id or model.MODEL_ID, dim or model.DIM
        self.embed_fn = embed_fn
        self.model_id = model_id or "embedding"
        self.dim = dim or 0
        self.offline_chat = offline_chat
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The OpenAI base URL ("http://127.0.0.1:PORT/v1")."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                        name="memsift-model-server")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memsift's OpenAI-compatible model server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-chat", action="store_true",
                        help="serve embeddings only (a real language model is configured)")
    args = parser.parse_args(argv)
    server = ModelServer(args.host, args.port, offline_chat=not args.no_chat)
    print(server.url, flush=True)  # the parent reads the URL (the port may have been 0)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
