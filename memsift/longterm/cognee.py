"""A Cognee server as the long-term store, over HTTP (httpx).

The prompt path makes exactly one call, `POST /api/v1/recall` with search type CHUNKS on
memsift's own dataset, authenticated by `X-Api-Key`: no identity round trips, no retries. It
never outlives its deadline: httpx's connect/read/write/pool timeouts are set to what is left,
and a wall-clock guard abandons a request that trickles past them (a server that accepts TCP
and never answers holds nothing). Everything else here (add, forget, cognify) is for sync and
setup, never for a prompt.

Cognee's `score` is a cosine distance (0 identical, 1 orthogonal, 2 opposite) with no threshold
applied, so top_k always comes back; Passage.similarity is 1 - distance, clipped to 0..1, and
memsift's judge decides what answers the prompt.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from memsift.clock import Deadline
from memsift.httppool import Pool
from memsift.longterm.base import LongTermError, Passage
from memsift.longterm.dataset import (
    ADD_BATCH,
    IMPORT_VECTOR_CACHE_NAME,
    VECTOR_CACHE_NAME,
    content_md5,
    dataset_name,
    state_path,
)

CONNECT_TIMEOUT_S = 1.0  # loopback or LAN; a server slower than this to accept is down for us
GUARD_SLACK_S = 0.05  # the guard fires just after httpx's own timeouts would have
MIN_REQUEST_S = 0.05  # below this there is no point sending a request at all
WRITE_TIMEOUT_S = 60.0  # sync and setup calls: an upload of many notes, not a prompt
COGNIFY_WAIT_S = 900.0  # an import waits for cognify: 300 notes took 81 s on a quiet machine
COGNIFY_POLL_S = 0.5
EMPTY_DATA_ERRORS = ("NoDataError", "DatasetNotFoundError")  # 404s that mean "nothing yet"
WARMING_UP_KIND = "memory_warming_up"  # the pseudo-item's status for an empty dataset


# --- errors at the boundary --------------------------------------------------------------------


def _error_name(response: httpx.Response) -> str:
    """Cognee's error bodies carry the exception's name somewhere in their text."""
    try:
        return json.dumps(response.json())
    except ValueError:
        return response.text[:500]


def check_response(response: httpx.Response) -> None:
    """Raise LongTermError for anything but success, with a reason the health logic can use."""
    status = response.status_code
    if status < 400:
        return
    detail = _error_name(response)[:300]
    if status in (401, 403):
        raise LongTermError(f"Cognee refused the API key ({status})", reason="auth")
    if status >= 500:
        raise LongTermError(f"Cognee server error {status}: {detail}", reason="server")
    raise LongTermError(f"Cognee answered {status}: {detail}", reason="bad_reply")


def is_empty_dataset(response: httpx.Response) -> bool:
    """A 404 that means the dataset has no searchable data yet (unknown, or not cognified)."""
    return response.status_code == 404 and any(n in _error_name(response)
                                                for n in EMPTY_DATA_ERRORS)


def convert_transport_error(exc: httpx.HTTPError) -> LongTermError:
    if isinstance(exc, httpx.ConnectError):
        return LongTermError(f"Cognee refused the connection: {exc}", reason="refused")
    if isinstance(exc, httpx.TimeoutException):
        return LongTermError(f"Cognee timed out: {exc}", reason="timeout")
    return LongTermError(f"Cognee transport error: {exc}", reason="error")


# --- the wall-clock guard ----------------------------------------------------------------------


def run_guarded(fn: Callable[[], Any], seconds: float) -> Any:
    """Run fn in a daemon thread and wait at most `seconds`. A daemon thread, not an executor:
    an abandoned request must not keep the hook's process alive at exit."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001  handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, daemon=True, name="memsift-cognee-recall").start()
    if not done.wait(seconds):
        raise LongTermError(f"Cognee gave no answer within {seconds:.2f}s", reason="timeout")
    if "error" in box:
        raise box["error"]
    return box["value"]


# --- reading a recall reply --------------------------------------------------------------------


def similarity_from_distance(score: Any) -> float:
    try:
        distance = float(score)
    except (TypeError, ValueError):
        return 0.0
    return min(1.0, max(0.0, 1.0 - distance))


def _is_system_item(item: dict) -> bool:
    """Cognee reports states (memory_warming_up, build_failed) as a pseudo-result."""
    return (item.get("source") == "system" or item.get("status") == WARMING_UP_KIND
            or item.get("kind") == WARMING_UP_KIND)


def parse_recall(payload: Any, index: dict[str, dict] | None = None) -> list[Passage]:
    """Cognee's flat list of results -> Passages; the warming-up pseudo-item means nothing."""
    if not isinstance(payload, list):
        raise LongTermError(f"Cognee recall reply is not a list: {str(payload)[:200]}",
                            reason="bad_reply")
    passages = []
    for item in payload:
        if not isinstance(item, dict) or _is_system_item(item):
            continue
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            continue
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        data_id = str(meta.get("data_id") or meta.get("id") or "")
        known = (index or {}).get(data_id, {})
        passages.append(Passage(
            id=known.get("id") or data_id or f"cognee-{len(passages)}",
            text=text.strip(),
            written=known.get("written", ""),
            source=f"cognee:{item.get('dataset_name') or ''}",
            similarity=similarity_from_distance(item.get("score")),
            meta={"data_id": data_id, "distance": item.get("score")},
        ))
    return passages


# --- the client ---------------------------------------------------------------------------------


@dataclass
class CogneeClient:
    """Every Cognee endpoint memsift uses, with foreign errors converted at the boundary."""

    url: str
    api_key: str = ""
    transport: httpx.BaseTransport | None = None
    timeout_s: float = WRITE_TIMEOUT_S  # for writes; recall brings its own

    def __post_init__(self) -> None:
        headers = {"X-Api-Key": self.api_key} if self.api_key else {}
        self.http = Pool(base_url=self.url.rstrip("/"), headers=headers,
                         transport=self.transport, trust_env=False,
                         timeout=httpx.Timeout(self.timeout_s,
                                               connect=min(CONNECT_TIMEOUT_S, self.timeout_s)))

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise convert_transport_error(exc) from exc

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        check_response(response)
        try:
            return response.json() if response.content else None
        except ValueError as exc:
            raise LongTermError(f"Cognee reply is not JSON: {response.text[:200]}",
                                reason="bad_reply") from exc

    # -- the prompt path
    def recall(self, query: str, dataset: str, top_k: int, timeout_s: float) -> Any:
        """One CHUNKS recall; the empty-dataset 404s come back as an empty list."""
        body = {"query": query, "search_type": "CHUNKS", "datasets": [dataset],
                "top_k": int(top_k)}
        timeout = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))
        response = self.request("POST", "/api/v1/recall", json=body, timeout=timeout)
        if is_empty_dataset(response):
            return []
        check_response(response)
        try:
            return response.json()
        except ValueError as exc:
            raise LongTermError(f"Cognee recall reply is not JSON: {response.text[:200]}",
                                reason="bad_reply") from exc

    # -- writes (sync, setup)
    def health(self, timeout_s: float = 2.0) -> bool:
        try:
            return self.http.get("/health", timeout=timeout_s).status_code == 200
        except httpx.HTTPError:
            return False

    def datasets(self) -> list[dict]:
        return self.call("GET", "/api/v1/datasets") or []

    def dataset_id(self, name: str) -> str | None:
        for item in self.datasets():
            if item.get("name") == name:
                return str(item.get("id"))
        return None

    def create_dataset(self, name: str) -> str:
        return str(self.call("POST", "/api/v1/datasets", json={"name": name})["id"])

    def add_texts(self, dataset: str, texts: list[str]) -> Any:
        """Add texts as items named by their content (text_<md5>); the form must be multipart,
        hence (None, value) parts: httpx sends those as plain form fields."""
        fields = [("datasetName", (None, dataset))]
        fields += [("raw_data", (None, text)) for text in texts]
        return self.call("POST", "/api/v1/add", files=fields)

    def dataset_data(self, dataset_id: str) -> list[dict]:
        return self.call("GET", f"/api/v1/datasets/{dataset_id}/data") or []

    def forget(self, dataset: str, data_id: str) -> None:
        response = self.request("POST", "/api/v1/forget",
                                json={"dataset": dataset, "dataId": data_id})
        if response.status_code == 404:
            return  # already gone: forgetting is idempotent for us
        check_response(response)

    def cognify(self, dataset: str, background: bool = True) -> Any:
        return self.call("POST", "/api/v1/cognify",
                         json={"datasets": [dataset], "runInBackground": background})

    def status(self, dataset_id: str) -> str:
        reply = self.call("GET", "/api/v1/datasets/status", params={"dataset": dataset_id})
        return str((reply or {}).get(dataset_id, "")) if isinstance(reply, dict) else ""


# --- the store ---------------------------------------------------------------------------------


class CogneeStore:
    """memsift's dataset on a Cognee server, behind the LongTermStore interface."""

    name = "cognee"

    def __init__(self, client: CogneeClient, dataset: str, timeout_s: float, *,
                 index_path: Path | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.dataset = dataset
        self.timeout_s = timeout_s
        self.index_path = index_path
        self.clock = clock

    @classmethod
    def from_settings(cls, settings, project_root, *,
                      transport: httpx.BaseTransport | None = None) -> CogneeStore:

        client = CogneeClient(settings["cognee.url"], settings["cognee.api_key"], transport)
        return cls(client, dataset_name(settings, project_root),
                   float(settings["cognee.timeout_s"]),
                   index_path=state_path(settings, project_root))

    @staticmethod
    def _read_index_file(path: Path | None) -> dict[str, dict]:
        if path is None:
            return {}
        try:
            return dict(json.loads(path.read_text(encoding="utf-8")).get("notes", {}))
        except (OSError, ValueError, AttributeError):
            return {}

    def _index(self) -> dict[str, dict]:
        """data id -> the note's (or imported passage's) id and date: the sync state and the
        import index, two small local reads."""
        index = {}
        for path in (self._import_path(), self.index_path):
            for key, entry in self._read_index_file(path).items():
                if entry.get("data_id"):
                    index[str(entry["data_id"])] = {"id": key,
                                                    "written": entry.get("written", "")}
        return index

    def search(self, query: str, top_k: int, deadline: Deadline) -> list[Passage]:
        budget = min(deadline.remaining(), self.timeout_s)
        if budget < MIN_REQUEST_S:
            raise LongTermError("no time left to ask Cognee", reason="timeout")
        payload = run_guarded(
            lambda: self.client.recall(query, self.dataset, top_k, budget),
            budget + GUARD_SLACK_S,
        )
        return self._with_vectors(parse_recall(payload, self._index()))

    def vector_cache(self, name: str = VECTOR_CACHE_NAME):
        """Vectors of the texts this project sent (built at sync and import, never here)."""
        if self.index_path is None:
            return None
        from memsift.model.vectors import VectorCache

        return VectorCache(self.index_path.parent, name)

    def _with_vectors(self, passages: list[Passage]) -> list[Passage]:
        """Attach each result's cached vector (meta["vector"], as the embedded store does) so
        the judge need not embed Cognee's results on the prompt path. Read only: a spent
        deadline means a text with no cached vector is left without one."""
        for name in (VECTOR_CACHE_NAME, IMPORT_VECTOR_CACHE_NAME):
            missing = [i for i, p in enumerate(passages) if "vector" not in p.meta]
            cache = self.vector_cache(name) if missing else None
            if cache is None:
                break
            try:
                matrix, present = cache.vectors([passages[i].text for i in missing],
                                                Deadline(0.0))
            except Exception:  # noqa: BLE001, S112  a torn cache only costs the judge time
                continue
            for row, i in enumerate(missing):
                if present[row]:
                    passages[i] = replace(passages[i],
                                          meta={**passages[i].meta, "vector": matrix[row]})
        return passages

    # -- not on the prompt path: sync owns the notes; these serve imports (bench, tests)
    def add(self, passages: Iterable[Passage]) -> int:
        """Import passages, cognify, and WAIT until Cognee can search them (an import is
        followed by searches). Their ids and dates go to the import index beside the sync
        state, so results carry them."""

        items = list(passages)
        if not items:
            return 0
        dataset_id = self.client.create_dataset(self.dataset)
        known = {e.get("hash") for e in self._read_index_file(self._import_path()).values()}
        fresh = [p for p in items if content_md5(p.text) not in known]
        for start in range(0, len(fresh), ADD_BATCH):
            self.client.add_texts(self.dataset, [p.text for p in fresh[start:start + ADD_BATCH]])
        if fresh:
            self.client.cognify(self.dataset, background=True)
            self.wait_cognified(dataset_id)
        self._record_import(dataset_id, items)
        cache = self.vector_cache(IMPORT_VECTOR_CACHE_NAME)
        if cache is not None:
            cache.build([p.text for p in items])
        return len(fresh)

    def wait_cognified(self, dataset_id: str, timeout_s: float = COGNIFY_WAIT_S) -> float:
        start = self.clock()
        while self.clock() - start < timeout_s:
            state = self.client.status(dataset_id)
            if state == "DATASET_PROCESSING_COMPLETED":
                return self.clock() - start
            if state == "DATASET_PROCESSING_ERRORED":
                raise LongTermError(f"cognify of {self.dataset!r} failed", reason="server")
            time.sleep(COGNIFY_POLL_S)
        raise LongTermError(f"cognify of {self.dataset!r} not done in {timeout_s:.0f}s",
                            reason="timeout")

    def _import_path(self) -> Path | None:
        if self.index_path is None:
            return None
        return self.index_path.with_name("cognee-import.json")

    def _record_import(self, dataset_id: str, items: list[Passage]) -> None:
        from memsift.fsutil import atomic_write

        path = self._import_path()
        if path is None:
            return
        by_md5 = {content_md5(p.text): p for p in items}
        entries = self._read_index_file(path)
        for item in self.client.dataset_data(dataset_id):
            digest = str(item.get("name", "")).removeprefix("text_")
            if digest in by_md5:
                passage = by_md5[digest]
                entries[passage.id] = {"data_id": str(item.get("id")), "hash": digest,
                                       "written": passage.written}
        atomic_write(path, json.dumps({"notes": entries}, indent=1, sort_keys=True))

    def remove(self, ids: Iterable[str]) -> int:
        """Forget passages by their own id (or by Cognee data id)."""
        by_id = {v["id"]: k for k, v in self._index().items()}
        removed = 0
        for passage_id in ids:
            self.client.forget(self.dataset, by_id.get(passage_id, passage_id))
            removed += 1
        return removed

    def count(self) -> int:
        dataset_id = self.client.dataset_id(self.dataset)
        return len(self.client.dataset_data(dataset_id)) if dataset_id else 0

    def close(self) -> None:
        self.client.close()
