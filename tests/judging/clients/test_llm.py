"""The LLM client against the loopback OpenAI-compatible server: retries, Retry-After, timeouts, bad bodies."""

from __future__ import annotations

import time

import pytest

from judging.clients.llm import LlmError, cost_usd, get_client
from tests.judging.fake_openai import Answer, Hang, Malformed, RateLimited, ServerError

USER = [{"role": "user", "content": "Is the sky blue?"}]


def test_it_returns_the_answer_and_the_usage_of_the_call(fake_openai):
    fake_openai.responder = lambda prompt: "Yes, it is."
    result = get_client().chat(model="gpt-4o-mini", messages=USER, max_tokens=5)
    assert (result.text, result.input_tokens, result.output_tokens, result.attempts) == (
        "Yes, it is.",
        4,
        3,
        1,
    )
    assert fake_openai.received[0].body["model"] == "gpt-4o-mini"
    assert fake_openai.received[0].body["max_tokens"] == 5
    assert fake_openai.received[0].headers["authorization"] == "Bearer sk-test"


def test_it_waits_as_long_as_retry_after_says_on_429(fake_openai):
    fake_openai.script(RateLimited(retry_after=1.0))
    result = get_client().chat(model="gpt-4o-mini", messages=USER)
    assert result.attempts == 2
    first, second = fake_openai.received
    assert (first.status, second.status) == (429, 200)
    # Backoff alone would wait about 10 ms in these settings: the second second comes from Retry-After.
    assert second.at - first.at >= 0.95


def test_it_backs_off_on_429_without_retry_after(fake_openai):
    fake_openai.script(RateLimited(retry_after=None), RateLimited(retry_after=None))
    result = get_client().chat(model="gpt-4o-mini", messages=USER)
    assert result.attempts == 3
    assert fake_openai.received[-1].at - fake_openai.received[0].at < 0.5


def test_it_retries_server_errors_until_an_answer(fake_openai):
    fake_openai.script(ServerError(500), ServerError(503))
    result = get_client().chat(model="gpt-4o-mini", messages=USER)
    assert result.attempts == 3
    assert [r.status for r in fake_openai.received] == [500, 503, 200]


def test_it_raises_its_own_error_when_server_errors_outlast_the_retries(fake_openai, settings):
    settings.LLM_MAX_RETRIES = 2
    fake_openai.script(ServerError(500), ServerError(500), ServerError(500), Answer("never asked"))
    with pytest.raises(LlmError) as failure:
        get_client().chat(model="gpt-4o-mini", messages=USER)
    assert (failure.value.status, failure.value.attempts) == (500, 3)
    assert len(fake_openai.received) == 3


def test_it_does_not_retry_a_bad_request(fake_openai):
    fake_openai.script(ServerError(400))
    with pytest.raises(LlmError) as failure:
        get_client().chat(model="gpt-4o-mini", messages=USER)
    assert failure.value.status == 400
    assert len(fake_openai.received) == 1


def test_it_times_out_a_hanging_call_and_asks_again(fake_openai, settings):
    settings.LLM_TIMEOUT = 0.3
    fake_openai.script(Hang(seconds=3))
    started = time.monotonic()
    result = get_client().chat(model="gpt-4o-mini", messages=USER)
    assert result.attempts == 2
    assert time.monotonic() - started < 2.0
    assert [r.status for r in fake_openai.received] == [-1, 200]


def test_it_gives_up_after_repeated_timeouts(fake_openai, settings):
    settings.LLM_TIMEOUT = 0.2
    settings.LLM_MAX_RETRIES = 1
    fake_openai.script(Hang(seconds=2), Hang(seconds=2))
    with pytest.raises(LlmError, match="timed out"):
        get_client().chat(model="gpt-4o-mini", messages=USER)
    assert len(fake_openai.received) == 2


@pytest.mark.parametrize("body", ["<html>bad gateway</html>", '{"object": "chat.completion", "choices": []}'])
def test_it_retries_a_body_that_is_not_a_chat_completion(fake_openai, body):
    fake_openai.script(Malformed(body))
    result = get_client().chat(model="gpt-4o-mini", messages=USER)
    assert (result.text, result.attempts) == ("Yes", 2)


def test_it_refuses_to_start_without_a_key_or_a_base_url(settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    settings.AZURE_OPENAI_ENDPOINT = ""
    with pytest.raises(LlmError, match="OPENAI_API_KEY"):
        get_client().chat(model="gpt-4o", messages=USER)


def test_it_talks_to_azure_deployments_when_an_azure_endpoint_is_set(fake_openai, settings):
    settings.AZURE_OPENAI_ENDPOINT = fake_openai.url.removesuffix("/v1")
    settings.AZURE_OPENAI_API_VERSION = "2024-10-21"
    result = get_client().chat(model="my-gpt4o-deployment", messages=USER)
    assert result.text == "Yes"
    request = fake_openai.received[0]
    assert request.path.startswith("/openai/deployments/my-gpt4o-deployment/chat/completions")
    assert "api-version=2024-10-21" in request.path
    assert request.headers["api-key"] == "sk-test"


def test_cost_follows_the_price_table_and_dated_snapshots(settings):
    settings.LLM_PRICES = {"gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6)}
    assert cost_usd("gpt-4o", 1_000_000, 100_000) == pytest.approx(2.5 + 1.0)
    assert cost_usd("gpt-4o-mini-2024-07-18", 2_000_000, 0) == pytest.approx(0.30)
    assert cost_usd("llama3", 1_000_000, 1_000_000) == 0.0
