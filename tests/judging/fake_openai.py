"""The loopback OpenAI-compatible server of the tests; it lives in devtools so `manage.py llm_fake_server` can
serve it to people trying Assay without an API key."""

from devtools.openai_server import (
    Answer,
    Behaviour,
    FakeOpenAI,
    Hang,
    Malformed,
    RateLimited,
    Received,
    ServerError,
    count_tokens,
)

__all__ = [
    "Answer",
    "Behaviour",
    "FakeOpenAI",
    "Hang",
    "Malformed",
    "RateLimited",
    "Received",
    "ServerError",
    "count_tokens",
]
