"""The Cognee store on the prompt path: reply shapes, and the deadline held whatever the server
does (refused, hung, trickling, 401, 500, slow). Real sockets on 127.0.0.1; no Cognee needed."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memsift.clock import Deadline
from memsift.config import load_settings
from memsift.longterm import get_store
from memsift.longterm.base import LongTermError
from memsift.longterm.cognee import CogneeClient, CogneeStore, dataset_name, parse_recall

SLACK_S = 0.35  # thread start, socket close and a loaded 2-core machine; far below a hang


class _Scripted(BaseHTTPRequestHandler):
    """Answers every POST with the server's (status, body, delay)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.path, dict(self.headers)))  # type: ignore[attr-defined]
        status, body, delay = self.server.script  # type: ignore[attr-defined]
        time.sleep(delay)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def scripted() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.daemon_threads = True
    server.script = (200, [], 0.0)  # type: ignore[attr-defined]
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent_socket() -> Iterator[socket.socket]:
    """Accepts connections (the kernel's backlog) and never reads or answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock
    sock.close()


@pytest.fixture
def trickler() -> Iterator[int]:
    """Accepts, then sends a status line one byte every 0.2 s: each read finishes well within
    httpx's read timeout, so only a wall-clock guard stops it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                    if stop.wait(0.2):
                        return
                    try:
                        conn.send(bytes([byte]))
                    except OSError:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1]
    stop.set()
    sock.close()


def _store(url: str, timeout_s: float = 1.0, key: str = "k") -> CogneeStore:
    return CogneeStore(CogneeClient(url, key), "memsift-p", timeout_s)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _timed_search(store: CogneeStore, budget: float) -> tuple[float, object]:
    start = time.monotonic()
    try:
        result: object = store.search("where do staging models live", 5, Deadline(budget))
    except LongTermError as exc:
        result = exc
    return time.monotonic() - start, result


CHUNK = {"kind": "chunk", "search_type": "CHUNKS", "text": "Staging models live in dbt.\n",
         "score": 0.25, "dataset_name": "memsift-p",
         "metadata": {"data_id": "d-1", "chunk_id": "c-1"}}
WARMING_UP = {"source": "system", "status": "memory_warming_up",
              "text": "Memory is still warming up: no knowledge graph data exists yet.",
              "datapoint_count": 0}


def test_a_chunk_becomes_a_passage_whose_similarity_is_one_minus_the_distance():
    [passage] = parse_recall([CHUNK])
    assert passage.text == "Staging models live in dbt."
    assert passage.similarity == pytest.approx(0.75)
    assert passage.meta["data_id"] == "d-1"


def test_distances_beyond_one_clip_to_zero_similarity():
    [passage] = parse_recall([dict(CHUNK, score=1.4)])
    assert passage.similarity == 0.0


def test_the_warming_up_pseudo_item_is_no_result():
    assert parse_recall([WARMING_UP]) == []


def test_a_reply_that_is_not_a_list_is_a_bad_reply():
    with pytest.raises(LongTermError) as info:
        parse_recall({"detail": "odd"})
    assert info.value.reason == "bad_reply"


def test_the_sync_index_gives_a_result_its_note_id_and_date(tmp_path, scripted):
    index = tmp_path / "cognee-sync.json"
    index.write_text(json.dumps({"notes": {"n07": {"data_id": "d-1", "hash": "x",
                                                   "written": "2025-01-21"}}}))
    scripted.script = (200, [CHUNK], 0.0)
    url = f"http://127.0.0.1:{scripted.server_address[1]}"
    store = CogneeStore(CogneeClient(url, "k"), "memsift-p", 1.0, index_path=index)
    [passage] = store.search("staging", 3, Deadline(1.0))
    assert (passage.id, passage.written) == ("n07", "2025-01-21")


def test_search_sends_one_chunks_recall_on_the_dataset_with_the_api_key(scripted):
    scripted.script = (200, [CHUNK], 0.0)
    store = _store(f"http://127.0.0.1:{scripted.server_address[1]}", key="secret-key")
    store.search("q", 4, Deadline(1.0))
    store.search("q", 4, Deadline(1.0))
    paths = [path for path, _ in scripted.requests]
    assert paths == ["/api/v1/recall", "/api/v1/recall"]  # no identity round trips
    assert scripted.requests[0][1]["X-Api-Key"] == "secret-key"


@pytest.mark.parametrize("error", ["NoDataError", "DatasetNotFoundError"])
def test_an_empty_or_unknown_dataset_is_no_result_not_an_error(scripted, error):
    scripted.script = (404, {"detail": f"nothing here [{error}]"}, 0.0)
    store = _store(f"http://127.0.0.1:{scripted.server_address[1]}")
    assert store.search("q", 3, Deadline(1.0)) == []


def test_a_404_from_a_wrong_url_is_an_error_not_silence(scripted):
    scripted.script = (404, {"detail": "Not Found"}, 0.0)
    store = _store(f"http://127.0.0.1:{scripted.server_address[1]}")
    with pytest.raises(LongTermError) as info:
        store.search("q", 3, Deadline(1.0))
    assert info.value.reason == "bad_reply"


def test_refused_connection_fails_fast_as_refused():
    elapsed, result = _timed_search(_store(f"http://127.0.0.1:{_closed_port()}"), 1.0)
    assert isinstance(result, LongTermError) and result.reason == "refused"
    assert elapsed < 1.0 + SLACK_S


def test_a_server_that_accepts_and_never_answers_costs_no_more_than_the_deadline(
        silent_socket):
    port = silent_socket.getsockname()[1]
    elapsed, result = _timed_search(_store(f"http://127.0.0.1:{port}", timeout_s=3.0), 0.8)
    assert isinstance(result, LongTermError) and result.reason == "timeout"
    assert 0.7 < elapsed < 0.8 + SLACK_S


def test_a_trickling_server_is_cut_off_by_the_wall_clock_guard(trickler):
    elapsed, result = _timed_search(_store(f"http://127.0.0.1:{trickler}", timeout_s=3.0), 0.8)
    assert isinstance(result, LongTermError) and result.reason == "timeout"
    assert elapsed < 0.8 + SLACK_S


def test_cognee_timeout_setting_caps_a_longer_caller_deadline(silent_socket):
    port = silent_socket.getsockname()[1]
    elapsed, result = _timed_search(_store(f"http://127.0.0.1:{port}", timeout_s=0.5), 5.0)
    assert isinstance(result, LongTermError) and result.reason == "timeout"
    assert elapsed < 0.5 + SLACK_S


@pytest.mark.parametrize("status,reason", [(401, "auth"), (403, "auth"), (500, "server"),
                                           (503, "server")])
def test_error_statuses_become_reasons(scripted, status, reason):
    scripted.script = (status, {"detail": "no"}, 0.0)
    elapsed, result = _timed_search(_store(f"http://127.0.0.1:{scripted.server_address[1]}"),
                                    1.0)
    assert isinstance(result, LongTermError) and result.reason == reason
    assert elapsed < 1.0 + SLACK_S


def test_a_slow_server_times_out_at_the_deadline_and_a_fast_enough_one_answers(scripted):
    url = f"http://127.0.0.1:{scripted.server_address[1]}"
    scripted.script = (200, [CHUNK], 1.5)
    elapsed, result = _timed_search(_store(url, timeout_s=3.0), 0.6)
    assert isinstance(result, LongTermError) and result.reason == "timeout"
    assert elapsed < 0.6 + SLACK_S
    scripted.script = (200, [CHUNK], 0.2)
    elapsed, result = _timed_search(_store(url, timeout_s=3.0), 2.0)
    assert isinstance(result, list) and len(result) == 1


def test_a_spent_deadline_sends_nothing(scripted):
    store = _store(f"http://127.0.0.1:{scripted.server_address[1]}")
    with pytest.raises(LongTermError):
        store.search("q", 3, Deadline(0.0))
    assert scripted.requests == []


def test_settings_choose_the_cognee_store_and_one_dataset_per_project(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMSIFT_COGNEE_URL", "http://127.0.0.1:9")
    settings = load_settings()
    store = get_store(settings, tmp_path / "alpha")
    assert isinstance(store, CogneeStore)
    assert store.dataset.startswith("memsift-alpha-")
    assert dataset_name(settings, tmp_path / "beta") != store.dataset
    monkeypatch.setenv("MEMSIFT_COGNEE_DATASET", "team-notes")
    assert get_store(load_settings(), tmp_path / "alpha").dataset == "team-notes"


def test_results_carry_cached_vectors_so_the_judge_need_not_embed_them(tmp_path, scripted):
    import numpy as np

    from memsift.longterm.cognee import VECTOR_CACHE_NAME
    from memsift.model.vectors import VectorCache

    calls = []

    def embed_fn(texts):
        calls.append(list(texts))
        return np.ones((len(texts), 4), np.float32) / 2.0

    VectorCache(tmp_path, VECTOR_CACHE_NAME, embed_fn, "all-MiniLM-L6-v2").build(
        ["Staging models live in dbt."])
    other = dict(CHUNK, text="Never synced here.", metadata={"data_id": "d-2"})
    scripted.script = (200, [CHUNK, other], 0.0)
    url = f"http://127.0.0.1:{scripted.server_address[1]}"
    store = CogneeStore(CogneeClient(url, "k"), "memsift-p", 1.0,
                        index_path=tmp_path / "cognee-sync.json")
    cached, uncached = store.search("staging", 3, Deadline(1.0))
    assert np.allclose(cached.meta["vector"], 0.5)
    assert "vector" not in uncached.meta  # nothing is embedded on the prompt path
    assert calls == [["Staging models live in dbt."]]
