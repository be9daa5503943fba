"""The part every fake model server shares: a threaded HTTP server on 127.0.0.1 that answers
scripted replies in order and records each request body. Subclasses give the handler (which
calls `self.server.owner.record(...)` and `.next_reply()`) and the URL's path."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Self

REPLY_TEXT = "ok"


class RecordingServer:
    handler: ClassVar[type[BaseHTTPRequestHandler]]
    url_path: ClassVar[str] = ""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        owner: RecordingServer

    def __init__(self, replies: list[str | dict] | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = self._Server(("127.0.0.1", 0), self.handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{self.url_path}"

    def next_reply(self) -> str | dict:
        with self._lock:
            return self.replies.pop(0) if self.replies else REPLY_TEXT

    def record(self, path: str, payload: dict) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": payload})

    def bodies(self, keep) -> list[str]:
        """Recorded request bodies whose path `keep` accepts, as JSON text."""
        with self._lock:
            return [json.dumps(r["body"]) for r in self.requests if keep(r["path"])]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
