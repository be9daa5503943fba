"""Fakes for what cannot run here, as real servers on 127.0.0.1. Registered as a pytest plugin
by tests/conftest.py, so any test can ask for the `openai_server` fixture."""

from __future__ import annotations

import pytest

from fakes.openai_server import FakeOpenAI


@pytest.fixture
def openai_server():
    """A fresh fake OpenAI-compatible server for one test; stopped (hangs released) after it."""
    with FakeOpenAI() as server:
        yield server
