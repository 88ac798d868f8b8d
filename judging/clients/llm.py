"""The one place Assay talks to an LLM: OpenAI, Azure OpenAI, or any OpenAI-compatible server.

Which endpoint is used is read from settings (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL,
AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_VERSION). The SDK's own retries are switched off: this
module retries itself so that a 429's `Retry-After` is honoured exactly and every attempt is counted.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    import openai

# Backoff without Retry-After: BACKOFF_BASE * 2**attempt seconds (with jitter), at most BACKOFF_MAX.
BACKOFF_BASE = 0.5
BACKOFF_MAX = 30.0
# A Retry-After longer than this is treated as "give up" rather than slept through.
RETRY_AFTER_MAX = 120.0


class LlmError(Exception):
    """The LLM endpoint could not give an answer (after retries), or Assay is not configured for one."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True)
class ChatResult:
    """One completed chat call: the answer text and what it cost in tokens."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int
    attempts: int = 1
    finish_reason: str = ""


@dataclass
class RetryPolicy:
    max_retries: int = 5
    backoff_base: float = BACKOFF_BASE
    backoff_max: float = BACKOFF_MAX
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def backoff(self, attempt: int) -> float:
        delay = min(self.backoff_max, self.backoff_base * (2**attempt))
        return delay * (0.5 + random.random() / 2)


def price_per_million(model: str) -> tuple[float, float] | None:
    """USD per million (input, output) tokens for a model from settings.LLM_PRICES, None when unknown."""
    prices: dict[str, tuple[float, float]] = getattr(settings, "LLM_PRICES", {})
    if model in prices:
        return prices[model]
    # Dated snapshots ("gpt-4o-2024-08-06") cost what their family costs: take the longest matching prefix.
    matches = [name for name in prices if model.startswith(name + "-")]
    return prices[max(matches, key=len)] if matches else None


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float:
    price = price_per_million(model)
    if price is None:
        return 0.0
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def _retry_after_seconds(response: Any) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, `retry-after` as seconds or as an HTTP date."""
    if response is None:
        return None
    headers = response.headers
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


class LlmClient:
    """A chat-completions client made on first use; safe to share between threads."""

    def __init__(
        self,
        *,
        base_url: str = "",
        api_key: str = "",
        azure_endpoint: str = "",
        azure_api_version: str = "",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.azure_endpoint = azure_endpoint
        self.azure_api_version = azure_api_version
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._sdk: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        if self.azure_endpoint:
            return f"azure:{self.azure_endpoint}"
        return self.base_url or "https://api.openai.com/v1"

    def _client(self) -> openai.OpenAI:
        with self._lock:
            if self._sdk is None:
                self._sdk = self._make()
            return self._sdk

    def _make(self) -> openai.OpenAI:
        # The SDK takes about half a second to import: only a process that calls a model pays for it.
        import openai

        if self.azure_endpoint:
            if not self.api_key:
                raise LlmError("AZURE_OPENAI_ENDPOINT is set but OPENAI_API_KEY is empty")
            return openai.AzureOpenAI(
                azure_endpoint=self.azure_endpoint,
                api_version=self.azure_api_version,
                api_key=self.api_key,
                timeout=self.timeout,
                max_retries=0,
            )
        if not self.base_url and not self.api_key:
            raise LlmError("set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server")
        # Local servers (vLLM, Ollama, llama.cpp) accept any key, but the SDK insists on one.
        return openai.OpenAI(
            base_url=self.base_url or None,
            api_key=self.api_key or "not-needed",
            timeout=self.timeout,
            max_retries=0,
        )

    def chat(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        """One chat completion, retried on 429 (after Retry-After), 5xx, timeouts and broken answers."""
        import openai

        sdk = self._client()
        params: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if seed is not None:
            params["seed"] = seed
        attempt = 0
        while True:
            attempt += 1
            try:
                completion = sdk.chat.completions.create(**params)
                return self._result(completion, model, attempt)
            except openai.RateLimitError as exc:
                wait = _retry_after_seconds(exc.response)
                if wait is not None and wait > RETRY_AFTER_MAX:
                    raise LlmError(f"rate limited for {wait:.0f} s", status=429, attempts=attempt) from exc
                error: LlmError = LlmError("rate limited (429)", status=429, attempts=attempt)
            except openai.APITimeoutError as exc:
                wait, error = None, LlmError(f"timed out after {self.timeout} s", attempts=attempt)
                error.__cause__ = exc
            except openai.APIConnectionError as exc:
                wait, error = None, LlmError(f"cannot reach {self.endpoint}: {exc}", attempts=attempt)
            except openai.APIStatusError as exc:
                if exc.status_code < 500 and exc.status_code not in (408, 409):
                    # A bad request, a bad key or an unknown model: retrying cannot help.
                    raise LlmError(
                        f"{exc.status_code} from {self.endpoint}: {exc.message}",
                        status=exc.status_code,
                        attempts=attempt,
                    ) from exc
                wait = _retry_after_seconds(exc.response)
                error = LlmError(
                    f"{exc.status_code} from {self.endpoint}", status=exc.status_code, attempts=attempt
                )
            except (
                openai.APIResponseValidationError,
                ValueError,
                AttributeError,
                IndexError,
                TypeError,
            ) as exc:
                # A 200 whose body is not a chat completion (not JSON, no choices): a broken server, retried.
                wait, error = (
                    None,
                    LlmError(f"malformed response from {self.endpoint}: {exc}", attempts=attempt),
                )
            if attempt > self.retry.max_retries:
                error.attempts = attempt
                raise error
            self.retry.sleep(wait if wait is not None else self.retry.backoff(attempt - 1))

    @staticmethod
    def _result(completion: Any, model: str, attempt: int) -> ChatResult:
        if isinstance(completion, str | bytes) or not getattr(completion, "choices", None):
            raise ValueError("the answer has no choices")
        choice = completion.choices[0]
        text = choice.message.content
        if not isinstance(text, str):
            raise ValueError("the answer has no message content")
        usage = completion.usage
        return ChatResult(
            text=text,
            model=getattr(completion, "model", None) or model,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0) if usage else 0,
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0) if usage else 0,
            attempts=attempt,
            finish_reason=str(getattr(choice, "finish_reason", "") or ""),
        )


_client_cache: dict[tuple, LlmClient] = {}
_client_cache_lock = threading.Lock()


def get_client() -> LlmClient:
    """The client for the current settings, made once per distinct configuration (tests change settings)."""
    config = (
        getattr(settings, "OPENAI_BASE_URL", ""),
        getattr(settings, "OPENAI_API_KEY", ""),
        getattr(settings, "AZURE_OPENAI_ENDPOINT", ""),
        getattr(settings, "AZURE_OPENAI_API_VERSION", ""),
        float(getattr(settings, "LLM_TIMEOUT", 60.0)),
        int(getattr(settings, "LLM_MAX_RETRIES", 5)),
        float(getattr(settings, "LLM_BACKOFF_BASE", BACKOFF_BASE)),
    )
    with _client_cache_lock:
        client = _client_cache.get(config)
        if client is None:
            base_url, api_key, azure_endpoint, azure_version, timeout, retries, backoff = config
            client = LlmClient(
                base_url=base_url,
                api_key=api_key,
                azure_endpoint=azure_endpoint,
                azure_api_version=azure_version,
                timeout=timeout,
                retry=RetryPolicy(max_retries=retries, backoff_base=backoff),
            )
            _client_cache[config] = client
        return client


def default_model() -> str:
    return getattr(settings, "OPENAI_MODEL", "") or "gpt-4o"
