"""A Cognee stand-in: real HTTP on 127.0.0.1 speaking the parts of Cognee's API memsift uses,
with faults on demand (hang, slow, an HTTP status) for the outage tests.

Routes: GET /health; POST /api/v1/recall {"query","search_type","datasets","top_k"} -> a flat
list of {kind, search_type, text, score (cosine DISTANCE), dataset_name, metadata{data_id}};
POST /api/v1/datasets {"name"}; POST /api/v1/add (multipart: datasetName, repeated raw_data);
POST /api/v1/cognify; POST /api/v1/forget {"dataset","dataId"}. With `api_key` set, requests
without that X-Api-Key get a 401 like a server with access control on.

Faults: `fault = Fault(hang=True)`, `Fault(delay_s=2.9)`, `Fault(status=500)`; they apply to
every route (`/health` too), like a real server that is down or overloaded. `stop()` gives
"connection refused"; `restart()` brings it back on the same port.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Fault:
    status: int = 0  # answer every request with this status (0: no fault)
    delay_s: float = 0.0  # answer this late
    hang: bool = False  # accept the connection, never answer (until the server stops)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def distance(query: str, text: str) -> float:
    """A cosine distance over word sets: 0 for the same words, 1 for none shared."""
    a, b = _words(query), _words(text)
    if not a or not b:
        return 1.0
    return 1.0 - len(a & b) / ((len(a) * len(b)) ** 0.5)


@dataclass
class FakeCognee:
    api_key: str | None = None
    fault: Fault = field(default_factory=Fault)
    datasets: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {data_id: text}
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)
    _port: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def add_text(self, dataset: str, text: str) -> str:
        data_id = hashlib.sha256(text.encode()).hexdigest()[:32]
        with self._lock:
            self.datasets.setdefault(dataset, {})[data_id] = text
        return data_id

    def recall_count(self) -> int:
        return sum(1 for _, path in self.requests if path.endswith("/recall"))

    # -- life ------------------------------------------------------------------------------
    def start(self) -> FakeCognee:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: clients now get "connection refused"."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def restart(self) -> FakeCognee:
        self.stop()
        return self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering -------------------------------------------------------------------------
    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        route = path.split("?", 1)[0]
        if method == "GET" and route == "/health":
            return 200, {"status": "ready", "health": "healthy"}
        if method == "POST" and route == "/api/v1/recall":
            return self._recall(body if isinstance(body, dict) else {})
        if method == "POST" and route == "/api/v1/datasets":
            name = str((body or {}).get("name", ""))
            with self._lock:
                self.datasets.setdefault(name, {})
            return 200, {"id": hashlib.md5(name.encode()).hexdigest(), "name": name}
        if method == "GET" and route == "/api/v1/datasets":
            return 200, [{"id": hashlib.md5(n.encode()).hexdigest(), "name": n}
                         for n in self.datasets]
        if method == "GET" and route.startswith("/api/v1/datasets/") and route.endswith("/data"):
            return self._data(route.split("/")[4])
        if method == "POST" and route == "/api/v1/add":
            return self._add(body)
        if method == "POST" and route == "/api/v1/cognify":
            return 200, {"status": "PipelineRunStarted"}
        if method == "POST" and route == "/api/v1/forget":
            return self._forget(body if isinstance(body, dict) else {})
        return 404, {"detail": "Not Found"}

    def _recall(self, body: dict) -> tuple[int, Any]:
        query = str(body.get("query", ""))
        top_k = int(body.get("top_k") or 10)
        names = body.get("datasets") or list(self.datasets)
        with self._lock:
            unknown = [n for n in names if n not in self.datasets]
            if unknown:
                return 404, {"error": "DatasetNotFoundError", "detail": f"{unknown[0]} not found"}
            rows = [(distance(query, text), name, data_id, text)
                    for name in names for data_id, text in self.datasets[name].items()]
        if not rows:
            return 200, [{"kind": "memory_warming_up", "text": "", "score": 1.0}]
        rows.sort()
        return 200, [{"kind": "chunk", "search_type": "CHUNKS", "text": text, "score": score,
                      "dataset_name": name, "metadata": {"data_id": data_id}}
                     for score, name, data_id, text in rows[:top_k]]

    def _add(self, body: Any) -> tuple[int, Any]:
        fields = body if isinstance(body, dict) else {}
        dataset = str(fields.get("datasetName", [""])[0])
        texts = fields.get("raw_data", []) + fields.get("data", [])
        ids = [self.add_text(dataset, text) for text in texts]
        return 200, {"status": "PipelineRunCompleted", "data_ids": ids}

    def _data(self, dataset_id: str) -> tuple[int, Any]:
        for name, items in self.datasets.items():
            if hashlib.md5(name.encode()).hexdigest() == dataset_id:
                return 200, [{"id": data_id, "name": f"text_{data_id}.txt"} for data_id in items]
        return 404, {"detail": "DatasetNotFoundError"}

    def _forget(self, body: dict) -> tuple[int, Any]:
        with self._lock:
            removed = self.datasets.get(str(body.get("dataset")), {}).pop(
                str(body.get("dataId")), None)
        return (200, {"status": "ok"}) if removed is not None else (404, {"detail": "no data"})


def _multipart(content_type: str, raw: bytes) -> dict[str, list[str]]:
    """The fields of a multipart/form-data body, as text (enough for raw_data uploads)."""
    match = re.search(r"boundary=\"?([^\";]+)\"?", content_type)
    if not match:
        return {}
    fields: dict[str, list[str]] = {}
    for part in raw.split(b"--" + match.group(1).encode())[1:-1]:
        head, _, value = part.strip(b"\r\n").partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        if name:
            fields.setdefault(name.group(1).decode(), []).append(
                value.decode("utf-8", errors="replace"))
    return fields


class _Handler(BaseHTTPRequestHandler):
    fake: FakeCognee
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        content_type = self.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            return _multipart(content_type, raw)
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _serve(self, method: str) -> None:
        body = self._body() if method == "POST" else None
        fake = self.fake
        with fake._lock:
            fake.requests.append((method, self.path))
        fault = fake.fault
        if fault.hang:
            fake._stop.wait()
            return
        if fault.delay_s and fake._stop.wait(fault.delay_s):
            return
        if fault.status:
            status, payload = fault.status, {"detail": f"scripted {fault.status}"}
        elif fake.api_key is not None and self.headers.get("x-api-key") != fake.api_key:
            status, payload = 401, {"detail": "Unauthorized"}
        else:
            status, payload = fake.answer(method, self.path, body)
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


if __name__ == "__main__":
    server = FakeCognee().start()
    print(server.url, flush=True)
    threading.Event().wait()
