"""Against a REAL Cognee server started here on 127.0.0.1, with memsift's model server for
its embeddings and offline answers. Data stays tiny: cognify is the slow part.

Cognee's Python comes from MEMSIFT_COGNEE_PYTHON (the Makefile sets it to its venv), else the
`cognee` extra, else `memsift cognee install`'s venv. Under CI a missing Cognee fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from memsift.clock import Deadline
from memsift.config import load_settings
from memsift.longterm import get_store
from memsift.longterm.base import LongTermError
from memsift.longterm.cognee import CogneeClient, CogneeStore, dataset_name
from memsift.longterm.sync import sync_project
from memsift.memory.notes import NotesFile, notes_path
from memsift.services.cognee_server import cognee_python, throwaway_server, wait_cognified

pytestmark = pytest.mark.cognee

COGNEE_PYTHON = cognee_python()  # read before the autouse fixture clears MEMSIFT_* vars
RECALL_S = 10.0  # a generous budget: these tests check answers; the deadline tests are elsewhere

PROJECT_A = [
    "Staging models use a double underscore between source and table, like stg_kafka__orders.",
    "The nightly dbt run starts at 02:00 UTC from the dbt_daily Airflow DAG.",
    "Snowpipe auto-ingest loads the Kafka landing tables from the topic's S3 prefix.",
]
PROJECT_B = [
    "The mobile app signs release builds with the key stored in the CI keystore.",
    "Push notifications go through Firebase Cloud Messaging for both platforms.",
]


@pytest.fixture(scope="module")
def cognee(tmp_path_factory):
    if COGNEE_PYTHON is None or not COGNEE_PYTHON.exists():
        message = "no Cognee: run `make cognee-venv` or `memsift cognee install`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    home = tmp_path_factory.mktemp("model-server-home")
    logs = tmp_path_factory.mktemp("cognee-logs")
    with throwaway_server(COGNEE_PYTHON, log_dir=logs,
                          model_env={"MEMSIFT_HOME": str(home)}) as server:
        yield server


@pytest.fixture
def settings_for(cognee, monkeypatch):
    monkeypatch.setenv("MEMSIFT_COGNEE_URL", cognee.url)
    monkeypatch.setenv("MEMSIFT_COGNEE_API_KEY", cognee.api_key)
    monkeypatch.setenv("MEMSIFT_COGNEE_TIMEOUT_S", str(RECALL_S))
    return load_settings


def _write_notes(settings, project: Path, texts: list[str], ids: list[str]) -> None:
    project.mkdir(exist_ok=True)
    lines = "".join(f"- {text} <!-- memsift id={i} -->\n" for text, i in zip(texts, ids))
    NotesFile(notes_path(settings, project)).write_locked("# notes\n\n" + lines)


def _sync_and_wait(settings, project: Path):
    report = sync_project(project, settings)
    assert report.ok, report.error
    client = CogneeClient(settings["cognee.url"], settings["cognee.api_key"])
    try:
        wait_cognified(client, dataset_name(settings, project))
    finally:
        client.close()
    return report


def _search(settings, project: Path, query: str, top_k: int = 3):
    store = get_store(settings, project)
    try:
        return store.search(query, top_k, Deadline(RECALL_S))
    finally:
        store.close()


@pytest.fixture(scope="module")
def two_projects(cognee, tmp_path_factory):
    """Projects A and B synced once for the module (each cognify costs seconds)."""
    root = tmp_path_factory.mktemp("projects")
    env = {"MEMSIFT_COGNEE_URL": cognee.url, "MEMSIFT_COGNEE_API_KEY": cognee.api_key,
           "MEMSIFT_COGNEE_TIMEOUT_S": str(RECALL_S), "MEMSIFT_HOME": str(root / "home")}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        settings = load_settings()
        a, b = root / "alpha", root / "beta"
        _write_notes(settings, a, PROJECT_A, ["a1", "a2", "a3"])
        _write_notes(settings, b, PROJECT_B, ["b1", "b2"])
        _sync_and_wait(settings, a)
        _sync_and_wait(settings, b)
    return env, a, b


def test_search_finds_the_note_that_answers(two_projects, monkeypatch):
    env, alpha, _ = two_projects
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    passages = _search(load_settings(), alpha, "what naming convention do staging models use?")
    assert passages[0].text == PROJECT_A[0]
    assert passages[0].id == "a1"  # the note's own id, from the sync index
    assert "vector" in passages[0].meta  # cached at sync: the judge embeds nothing
    assert 0.0 < passages[0].similarity <= 1.0
    assert passages[0].similarity > passages[-1].similarity


def test_one_project_never_sees_another_project_s_notes(two_projects, monkeypatch):
    env, alpha, beta = two_projects
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    seen_in_b = {p.text for p in _search(settings, beta, "staging models dbt kafka", top_k=10)}
    seen_in_a = {p.text for p in _search(settings, alpha, "mobile push release", top_k=10)}
    assert seen_in_b <= set(PROJECT_B) and seen_in_b
    assert seen_in_a <= set(PROJECT_A) and seen_in_a


def test_sync_retires_edited_and_removed_notes(settings_for, tmp_path):
    settings = settings_for()
    project = tmp_path / "gamma"
    _write_notes(settings, project, ["The deploy window is Tuesday afternoon.",
                                     "Feature flags live in LaunchDarkly.",
                                     "The on-call rota changes every Monday."],
                 ["g1", "g2", "g3"])
    first = _sync_and_wait(settings, project)
    assert first.added == 3
    _write_notes(settings, project, ["The deploy window moved to Thursday morning.",
                                     "Feature flags live in LaunchDarkly."], ["g1", "g2"])
    second = _sync_and_wait(settings, project)
    assert (second.added, second.forgotten) == (1, 2)
    texts = {p.text for p in _search(settings, project, "when is the deploy window?", 10)}
    assert texts == {"The deploy window moved to Thursday morning.",
                     "Feature flags live in LaunchDarkly."}
    store = get_store(settings, project)
    assert store.count() == 2
    store.close()
    assert sync_project(project, settings).added == 0  # nothing changed, nothing sent


def test_a_dataset_added_but_not_yet_cognified_gives_no_results(settings_for, tmp_path):
    settings = settings_for()
    client = CogneeClient(settings["cognee.url"], settings["cognee.api_key"])
    client.create_dataset("memsift-not-cognified")
    client.add_texts("memsift-not-cognified", ["Waiting for cognify."])
    client.close()
    for dataset in ("memsift-not-cognified", "memsift-never-created"):
        store = CogneeStore(CogneeClient(settings["cognee.url"], settings["cognee.api_key"]),
                            dataset, RECALL_S)
        assert store.search("cognify", 3, Deadline(RECALL_S)) == []
        store.close()


def test_the_server_requires_an_api_key(cognee):
    reply = httpx.post(cognee.url + "/api/v1/recall", timeout=10,
                       json={"query": "q", "search_type": "CHUNKS", "datasets": ["x"]})
    assert reply.status_code == 401
    store = CogneeStore(CogneeClient(cognee.url, "wrong-key"), "x", RECALL_S)
    with pytest.raises(LongTermError) as info:
        store.search("q", 3, Deadline(RECALL_S))
    assert info.value.reason == "auth"
    store.close()


def test_an_imported_memory_is_searchable_at_once_with_its_own_ids(cognee, tmp_path):
    from memsift.services.cognee_server import import_memory

    index = tmp_path / "cognee-sync.json"
    passages = [{"id": "m01", "text": "Backfills run with the --full-refresh flag off.",
                 "written": "2024-07-02"},
                {"id": "m02", "text": "The warehouse is Snowflake, region eu-west-1."}]
    result = import_memory(cognee.url, cognee.api_key, "memsift-import", passages,
                           index_path=index)
    assert result["added"] == 2 and result["cognify_s"] > 0
    store = CogneeStore(CogneeClient(cognee.url, cognee.api_key), "memsift-import", RECALL_S,
                        index_path=index)
    [top, *_] = store.search("which region is the warehouse in?", 2, Deadline(RECALL_S))
    assert (top.id, top.text) == ("m02", passages[1]["text"])
    assert store.add([]) == 0 and store.count() == 2
    store.close()


def test_cognee_start_runs_a_server_stores_its_key_and_stop_ends_it(monkeypatch, tmp_path):
    import stat
    import tomllib

    from click.testing import CliRunner

    from memsift.cli import cli
    from memsift.services.cognee_server import free_port

    if COGNEE_PYTHON is None or not COGNEE_PYTHON.exists():
        pytest.skip("no Cognee")  # the module fixture already failed this under CI
    monkeypatch.setenv("MEMSIFT_COGNEE_PYTHON", str(COGNEE_PYTHON))
    config = load_settings().paths.config_file
    config.parent.mkdir(parents=True)
    config.write_text('[budget]\nchars = 900\n')
    runner = CliRunner()
    port = free_port()
    try:
        started = runner.invoke(cli, ["cognee", "start", "--port", str(port)])
        assert started.exit_code == 0, started.output
        data = tomllib.loads(config.read_text())
        assert data["cognee"]["url"] == f"http://127.0.0.1:{port}"
        assert data["cognee"]["api_key"] and data["budget"] == {"chars": 900}
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        status = runner.invoke(cli, ["cognee", "status"])
        assert status.exit_code == 0 and "healthy: yes" in status.output
    finally:
        stopped = runner.invoke(cli, ["cognee", "stop"])
    assert "stopped" in stopped.output
    assert runner.invoke(cli, ["cognee", "status"]).exit_code == 1
