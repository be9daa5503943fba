"""The clients the cascade closes at its deadline: a request still out when `close` is called
finishes on an open connection, the client closes once it is back, and nothing starts after."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memsift.httppool import ClientClosed, Pool


class SlowHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    started = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        SlowHandler.started.set()
        time.sleep(0.3)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_a_request_out_at_close_gets_its_answer_and_then_the_client_closes(url):
    pool = Pool(base_url=url, trust_env=False)
    answers: list[object] = []

    def ask() -> None:
        try:
            answers.append(pool.post("/decide", json={}).status_code)
        except Exception as exc:  # noqa: BLE001 - the assertion below names it
            answers.append(exc)

    SlowHandler.started.clear()
    thread = threading.Thread(target=ask)
    thread.start()
    assert SlowHandler.started.wait(5)
    pool.close()
    assert not pool.closed  # the request is still out
    thread.join(5)
    assert answers == [200]  # a plain httpx client cuts it: "Bad file descriptor"
    assert pool.closed


def test_nothing_starts_after_close_and_an_idle_client_closes_at_once(url):
    pool = Pool(base_url=url, trust_env=False)
    pool.close()
    assert pool.closed
    with pytest.raises(ClientClosed):
        pool.post("/decide", json={})
