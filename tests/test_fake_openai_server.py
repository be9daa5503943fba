"""The shared fake OpenAI server behaves like the API for the calls memsift makes."""

from __future__ import annotations

import json
import math

import httpx
import openai
import pytest
from fakes.openai_server import EMBED_DIM, FAKE_MODEL, hash_vector, json_reply


@pytest.fixture
def client(openai_server):
    with openai.OpenAI(base_url=openai_server.url, api_key="sk-fake", max_retries=0,
                       http_client=httpx.Client(timeout=5)) as api:
        yield api


def test_embeddings_are_deterministic_unit_vectors(client):
    got = client.embeddings.create(model="any", input=["alpha", "beta", "alpha"])
    vectors = [d.embedding for d in got.data]
    assert [len(v) for v in vectors] == [EMBED_DIM] * 3
    assert vectors[0] == vectors[2] != vectors[1]
    assert math.isclose(sum(x * x for x in vectors[0]), 1.0, rel_tol=1e-9)
    assert vectors[1] == hash_vector("beta")


def test_embeddings_can_come_from_a_callback(client, openai_server):
    openai_server.on_embeddings = lambda texts: [[float(len(t)), 0.0] for t in texts]
    got = client.embeddings.create(model="any", input="four")
    assert got.data[0].embedding == [4.0, 0.0]


def test_json_replies_serve_response_format_callers(client, openai_server):
    openai_server.script(json_reply({"keep": True, "note": "sqlite for the cache"}))
    reply = client.chat.completions.create(
        model=FAKE_MODEL, messages=[{"role": "user", "content": "x"}],
        response_format={"type": "json_object"})
    assert json.loads(reply.choices[0].message.content) == {
        "keep": True, "note": "sqlite for the cache"}
    (request,) = openai_server.chat_requests()
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.headers["authorization"] == "Bearer sk-fake"


def test_an_unscripted_chat_request_fails_loudly(client):
    with pytest.raises(openai.InternalServerError, match="no reply scripted"):
        client.chat.completions.create(model=FAKE_MODEL, messages=[{"role": "user", "content": "x"}])


def test_a_server_key_refuses_other_keys(client, openai_server):
    openai_server.api_key = "sk-other"
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
