"""memsift's model server for Cognee, the offline answers, the config writer and the sync queue.
Real HTTP on 127.0.0.1; no Cognee needed."""

from __future__ import annotations

import json
import os
import socket
import stat
import tomllib

import httpx
import numpy as np
import pytest

from memsift.config import load_settings
from memsift.longterm.sync import notes_changed, queue_path, read_queue, sync_project
from memsift.memory.notes import NotesFile, notes_path
from memsift.model import embed
from memsift.services.cognee_local import set_table_keys, write_config_keys
from memsift.services.embed_server import ModelServer, chat_reply, minimal_instance

KNOWLEDGE_GRAPH = {  # Cognee's KnowledgeGraph schema, as its JSON mode puts it in the prompt
    "$defs": {
        "Node": {"properties": {"id": {"type": "string"}, "type": {"type": "string"}},
                 "required": ["id", "type"], "type": "object"},
        "Edge": {"properties": {"source_node_id": {"type": "string"}},
                 "required": ["source_node_id"], "type": "object"},
    },
    "properties": {"nodes": {"items": {"$ref": "#/$defs/Node"}, "type": "array"},
                   "edges": {"items": {"$ref": "#/$defs/Edge"}, "type": "array"}},
    "required": ["nodes", "edges"], "title": "KnowledgeGraph", "type": "object",
}


@pytest.fixture(scope="module")
def server():
    with ModelServer() as running:
        yield running


def test_embeddings_are_the_offline_model_s_vectors(server):
    texts = ["Staging models use a double underscore.", "The nightly job runs at 02:00."]
    reply = httpx.post(server.url + "/embeddings", json={"input": texts, "model": "x"},
                       timeout=60).json()
    vectors = np.array([item["embedding"] for item in reply["data"]], dtype=np.float32)
    assert vectors.shape == (2, embed.DIM)
    assert np.allclose(vectors, embed.embed(texts), atol=1e-5)
    assert reply["model"] == embed.MODEL_ID
    assert [item["index"] for item in reply["data"]] == [0, 1]


def test_a_single_string_input_gets_one_vector(server):
    reply = httpx.post(server.url + "/embeddings", json={"input": "hello"}, timeout=60).json()
    assert len(reply["data"]) == 1


@pytest.mark.parametrize("body", [{"input": [1, 2, 3]}, {"input": []}, {},
                                  {"input": "x", "dimensions": 1536}])
def test_requests_the_model_cannot_serve_are_refused_with_400(server, body):
    reply = httpx.post(server.url + "/embeddings", json=body, timeout=60)
    assert reply.status_code == 400
    assert "message" in reply.json()["error"]


def test_the_minimal_knowledge_graph_is_empty():
    assert minimal_instance(KNOWLEDGE_GRAPH, KNOWLEDGE_GRAPH["$defs"], "text") == {
        "nodes": [], "edges": []}


def test_json_mode_reads_the_schema_from_the_prompt_and_answers_an_empty_graph():
    system = ("Extract a graph. Respond with JSON matching this schema:\n```json\n"
              + json.dumps(KNOWLEDGE_GRAPH, indent=2) + "\n```\nNo other text.")
    body = {"model": "m", "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": "Alice works at Acme."}]}
    content = chat_reply(body)["choices"][0]["message"]["content"]
    assert json.loads(content) == {"nodes": [], "edges": []}


def test_a_required_string_gets_the_first_sentence_never_invented_text():
    schema = {"type": "object", "properties": {"summary": {"type": "string"}},
              "required": ["summary"]}
    body = {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
            "messages": [{"role": "user", "content": "Kafka lands raw. Then dbt models it."}]}
    content = chat_reply(body)["choices"][0]["message"]["content"]
    assert json.loads(content) == {"summary": "Kafka lands raw."}


def test_config_keys_are_written_into_their_table_and_the_rest_is_kept(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('# mine\n[llm]\nmodel = "m"\n\n[cognee]\ntimeout_s = 2.5\nurl = "old"\n'
                    '\n[budget]\nchars = 900\n')
    write_config_keys(path, {"url": "http://127.0.0.1:8737", "api_key": "k1"})
    data = tomllib.loads(path.read_text())
    assert data["cognee"] == {"timeout_s": 2.5, "url": "http://127.0.0.1:8737",
                              "api_key": "k1"}
    assert data["llm"] == {"model": "m"} and data["budget"] == {"chars": 900}
    assert path.read_text().startswith("# mine\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_config_gets_a_cognee_table_when_it_has_none():
    text = set_table_keys('[llm]\nmodel = "m"\n', "cognee", {"api_key": 'a"b'})
    assert tomllib.loads(text)["cognee"] == {"api_key": 'a"b'}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_notes_that_cannot_be_sent_stay_queued_and_are_not_queued_twice(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMSIFT_COGNEE_URL", f"http://127.0.0.1:{_closed_port()}")
    settings = load_settings()
    project = tmp_path / "proj"
    project.mkdir()
    NotesFile(notes_path(settings, project)).write_locked(
        "- Staging models use a double underscore.\n- The nightly job runs at 02:00.\n")
    report = notes_changed(project, settings)
    assert report.error.startswith("refused") and report.pending == 2
    again = sync_project(project, settings)
    assert again.pending == 2  # the same two adds, not four
    ops = read_queue(queue_path(settings, project))
    assert sorted(op["op"] for op in ops) == ["add", "add"]


def test_without_cognee_configured_notes_changed_does_nothing(tmp_path):
    settings = load_settings()
    assert notes_changed(tmp_path, settings).ok
    assert not queue_path(settings, tmp_path).exists()
