"""One httpx client per service client, closed once its last request is back.

The cascade judges and searches on daemon threads and gives up on them at its deadline; it then closes the
clients it made. Closing an httpx client under a request still in flight lets that request hand
its connection back to a pool that is already shut, and the socket is never closed (the
process leaks it until it exits, a long-lived caller for good). So `close` only marks the client
closing while requests are out; the last one to come back closes it, and a request started
after `close` is refused before it opens anything.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

# httpx's package init imports its command-line tool (click, rich, pygments: about 0.12 s of
# the 0.3 s its import costs) whenever they are installed, and memsift installs them. The
# prompt path never runs that tool: a None entry makes the optional import fail fast, and
# httpx falls back to a stub `httpx.main`. Only when httpx is not loaded yet, so a process that
# already has the tool keeps it.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx  # after the entry above, on purpose


class ClientClosed(RuntimeError):
    """A request started after its client was closed (an abandoned thread, late)."""


class Pool:
    """An `httpx.Client` whose `close` waits for no one and leaks nothing."""

    def __init__(self, **client_args: Any) -> None:
        self._client = httpx.Client(**client_args)
        self._lock = threading.Lock()
        self._out = 0
        self._closing = False

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        with self._lock:
            if self._closing:
                raise ClientClosed("the client was closed before this request started")
            self._out += 1
        try:
            return self._client.request(method, path, **kwargs)  # read whole: nothing left open
        finally:
            with self._lock:
                self._out -= 1
                last = self._closing and self._out == 0
            if last:
                self._client.close()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            idle = self._out == 0
        if idle:
            self._client.close()

    @property
    def closed(self) -> bool:
        return self._client.is_closed
