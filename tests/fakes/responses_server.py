"""A fake OpenAI Responses server on 127.0.0.1 (what Codex speaks): answers every request with
one short streamed message and records each request body, so a test can check what reached
the model.

Run as a module to use it by hand: `cd tests && python -m fakes.responses_server` prints its URL.
"""

from __future__ import annotations

import itertools
import json
from http.server import BaseHTTPRequestHandler

from fakes.recording_server import RecordingServer

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


class FakeResponsesServer(RecordingServer):
    """Start with `with FakeResponsesServer() as server:`; `server.url` ends in /v1.

    `replies` are answered in order (a str is text, a dict a function call), then
    REPLY_TEXT."""

    handler = _Handler
    url_path = "/v1"

    def response_bodies(self) -> list[str]:
        """Each recorded /responses request body as JSON text, to search for a marker."""
        return self.bodies(lambda path: path.rstrip("/").endswith("/responses"))


if __name__ == "__main__":
    import time

    with FakeResponsesServer() as fake:
        print(fake.url, flush=True)
        while True:
            time.sleep(3600)
