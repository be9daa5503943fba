"""A fake OpenAI Responses server on 127.0.0.1 (what Codex speaks): answers every request with
one short streamed message and records each request body, so a test can check what reached
the model.

Run as a module to use it by hand: `python -m tests.fakes.responses_server` prints its URL.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

REPLY_TEXT = "ok"
_ids = itertools.count(1)


def _sse(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _output_item(n: int, reply: str | dict) -> dict:
    """A message for text; a function call for {"name": ..., "arguments": {...}}."""
    if isinstance(reply, dict):
        return {"type": "function_call", "id": f"fc_fake_{n}", "call_id": f"call_fake_{n}",
                "name": reply["name"], "arguments": json.dumps(reply["arguments"]),
                "status": "completed"}
    return {
        "type": "message", "id": f"msg_fake_{n}", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": reply, "annotations": []}],
    }


def _response_stream(reply: str | dict) -> bytes:
    """The least Codex needs: created, one finished output item, completed."""
    n = next(_ids)
    response_id = f"resp_fake_{n}"
    item = _output_item(n, reply)
    usage = {
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 11,
    }
    return b"".join([
        _sse({"type": "response.created", "response": {"id": response_id}}),
        _sse({"type": "response.output_item.done", "output_index": 0, "item": item}),
        _sse({"type": "response.completed",
              "response": {"id": response_id, "usage": usage, "output": [item]}}),
    ])


class _Handler(BaseHTTPRequestHandler):
    server: FakeResponsesServer._Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [], "models": []}).encode()
        self._send(200, "application/json", body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {"_unparsed": raw.decode("utf-8", "replace")}
        self.server.owner.record(self.path, payload)
        self._send(200, "text/event-stream", _response_stream(self.server.owner.next_reply()))

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


class FakeResponsesServer:
    """Start with `with FakeResponsesServer() as server:`; `server.url` ends in /v1.

    `replies` are answered in order (a str is text, a dict a function call), then
    REPLY_TEXT."""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        owner: FakeResponsesServer

    def __init__(self, replies: list[str | dict] | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = self._Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def next_reply(self) -> str | dict:
        with self._lock:
            return self.replies.pop(0) if self.replies else REPLY_TEXT

    def record(self, path: str, payload: dict) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": payload})

    def response_bodies(self) -> list[str]:
        """Each recorded /responses request body as JSON text, to search for a marker."""
        with self._lock:
            return [json.dumps(r["body"]) for r in self.requests
                    if r["path"].rstrip("/").endswith("/responses")]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


if __name__ == "__main__":
    import time

    with FakeResponsesServer() as fake:
        print(fake.url, flush=True)
        while True:
            time.sleep(3600)
