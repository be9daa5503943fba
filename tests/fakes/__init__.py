"""Fakes for what cannot run here, as real servers on 127.0.0.1. Registered as a pytest plugin
by tests/conftest.py, so any test can ask for the `openai_server` fixture."""

from __future__ import annotations

import pytest

from fakes.openai_server import FakeOpenAI
from memsift.bench.openai_decisions_server import OpenAIDecisionsServer
from memsift.bench.systemone_server import SystemOneServer


@pytest.fixture
def openai_server():
    """A fresh fake OpenAI-compatible server for one test; stopped (hangs released) after it."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def systemone_server():
    """A fresh System One stand-in (memsift.bench.decision_server) with the key "k"."""
    with SystemOneServer(api_key="k") as server:
        yield server


@pytest.fixture
def decisions_server():
    """A fresh OpenAI Decisions stand-in with the key "k"."""
    with OpenAIDecisionsServer(api_key="k") as server:
        yield server
