"""A fake Anthropic Messages server on 127.0.0.1: answers every request with one short
streamed text reply and records each request body, so a test can check what reached the model.

Run as a module to use it by hand: `cd tests && python -m fakes.anthropic_server` prints its URL.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from fakes.recording_server import REPLY_TEXT, RecordingServer


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _tool_use_events(tool: dict) -> list[bytes]:
    block = {"type": "tool_use", "id": tool.get("id", "toolu_fake"), "name": tool["name"],
             "input": {}}
    delta = {"type": "input_json_delta", "partial_json": json.dumps(tool["input"])}
    return [
        _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": delta}),
    ]


def _message_stream(model: str, reply: str | dict) -> bytes:
    """The event sequence Claude Code expects for one answer: text, or a tool call when the
    reply is {"name": ..., "input": {...}}."""
    message = {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    if isinstance(reply, dict):
        blocks, stop_reason = _tool_use_events(reply), "tool_use"
    else:
        blocks, stop_reason = [
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": reply}}),
        ], "end_turn"
    return b"".join([
        _sse("message_start", {"type": "message_start", "message": message}),
        *blocks,
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                               "usage": {"output_tokens": 1}}),
        _sse("message_stop", {"type": "message_stop"}),
    ])


def _message_json(model: str, text: str) -> bytes:
    return json.dumps({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1},
    }).encode()


class _Handler(BaseHTTPRequestHandler):
    server: FakeAnthropicServer._Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._send(200, "application/json", b"{}")

    def do_HEAD(self) -> None:
        self._send(200, "application/json", b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            payload = {"_unparsed": body.decode("utf-8", "replace")}
        self.server.owner.record(self.path, payload)
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            self._send(200, "application/json", json.dumps({"input_tokens": 10}).encode())
            return
        model = str(payload.get("model", "claude-fake"))
        if payload.get("stream"):
            reply = self.server.owner.next_reply()
            self._send(200, "text/event-stream", _message_stream(model, reply))
        else:
            self._send(200, "application/json", _message_json(model, REPLY_TEXT))

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


class FakeAnthropicServer(RecordingServer):
    """Start with `with FakeAnthropicServer() as server:`; `server.url`, `server.requests`.

    `replies` are answered in order (a str is text, a dict a tool call), then REPLY_TEXT."""

    handler = _Handler
    url_path = ""

    def message_bodies(self) -> list[str]:
        """Each recorded /v1/messages request body as JSON text, to search for a marker."""
        return self.bodies(
            lambda path: path.startswith("/v1/messages") and "count_tokens" not in path)


if __name__ == "__main__":
    import time

    with FakeAnthropicServer() as fake:
        print(fake.url, flush=True)
        while True:
            time.sleep(3600)
