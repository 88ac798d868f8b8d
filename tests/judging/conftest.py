"""Fixtures of the judging tests: a loopback OpenAI-compatible server the LLM client is pointed at, and a
tiny random NLI model saved to disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judging.fake_openai import FakeOpenAI
from tests.judging.nli_model import build_tiny_nli_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per run: the tests only read it."""
    return build_tiny_nli_model(tmp_path_factory.mktemp("tiny-nli"))


@pytest.fixture
def fake_openai(settings):
    """A running fake server; settings point the LLM client at it with short timeouts and backoff."""
    server = FakeOpenAI().start()
    settings.OPENAI_BASE_URL = server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.AZURE_OPENAI_ENDPOINT = ""
    settings.OPENAI_MODEL = "gpt-4o-mini"
    settings.LLM_TIMEOUT = 1.0
    settings.LLM_MAX_RETRIES = 3
    settings.LLM_BACKOFF_BASE = 0.01
    yield server
    server.stop()
