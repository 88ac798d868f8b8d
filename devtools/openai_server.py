"""A loopback OpenAI-compatible server for tests, benchmarks and demos: POST /v1/chat/completions.

It answers in the real response shape (id, object, created, model, choices[].message, usage), with a
responder that picks the answer text from the prompt (and, for a `model_responder`, the request's model).
Scripted behaviours are consumed one per request before the responder is used: 429 with Retry-After, 5xx,
hangs (for client timeouts), malformed bodies. `toy_responder` answers each of Assay's judge prompts in the
form it asks for, so a whole campaign can be tried without an API key (`manage.py llm_fake_server`); its
labels mean nothing, but two model names give different labels on some items, as two real models do.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass(frozen=True)
class RateLimited:
    retry_after: float | None = 1.0


@dataclass(frozen=True)
class ServerError:
    status: int = 500


@dataclass(frozen=True)
class Hang:
    seconds: float = 5.0


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not a chat completion (by default not even JSON)."""

    body: str = "<html>upstream proxy error</html>"


Behaviour = Answer | RateLimited | ServerError | Hang | Malformed


@dataclass
class Received:
    at: float
    body: dict[str, Any]
    path: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 0

    @property
    def prompt(self) -> str:
        return "\n".join(m.get("content", "") for m in self.body.get("messages", []))

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "")


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


# One label in VARY_ONE_IN moves to a neighbouring label, chosen by a hash of the model name and the item:
# two models then agree on most items but not all (Cohen's kappa below 1, run scores that differ), and one
# model gives the same label to the same item every time.
VARY_ONE_IN = 10


def varied(labels: Sequence[str], index: int, *, model: str, item: str) -> str:
    """`labels[index]`, or for one item in VARY_ONE_IN (by a hash of model and item) a neighbouring label."""
    pick = zlib.crc32(f"{model}\n{item}".encode())
    if pick % VARY_ONE_IN != 0:
        return labels[index]
    down = index == len(labels) - 1 or (index > 0 and (pick >> 16) % 2 == 1)
    return labels[index - 1 if down else index + 1]


def toy_responder(prompt: str, model: str = "") -> str:
    """An answer in the shape each judge prompt asks for, chosen by a hash of the prompt (stable across runs)
    and varied by the model's name (`varied`).

    For trying the pipeline end to end only: a relevance grade, Yes/No, a support label; nugget prompts get
    "No nugget" / "Not found", since copying spans would need the passage parsed out of the prompt. TREC
    RAG nugget prompts get the answers of `rag_nuggets_responder`.
    """
    pick = zlib.crc32(prompt.encode("utf-8"))
    rag = rag_nuggets_responder(prompt, model)
    if rag is not None:
        return rag
    if "Grade: <0, 1, 2, 3 or 4>" in prompt:
        return "Grade: " + varied("01234", pick % 5, model=model, item=prompt)
    if "Full Support" in prompt and "No Support" in prompt:
        labels = ("Full Support", "Partial Support", "No Support")
        return varied(labels, pick % 3, model=model, item=prompt)
    if 'write exactly "Not found"' in prompt:
        return "Not found"
    if "No nugget" in prompt:
        return "No nugget"
    return varied(("Yes", "No"), pick % 2, model=model, item=prompt)


# --- TREC RAG nugget prompts (judging/machine/prompts/{nuggets_create,importance,assignment}_v1.txt) ------

_SECTION_END = re.compile(r"\n\s*\n")
_NUMBERED = re.compile(r"^\s*(?:\d+\.|\[\d+\])\s+(.*)$")
_MAX_NUGGETS = re.compile(r"keep at most (\d+) nuggets")
_WORD = re.compile(r"[a-z0-9]+")
ASSIGNMENT_LABELS = ("not_support", "partial_support", "support")


def _section(prompt: str, heading: str, last: bool = False) -> str:
    """The text after a heading line up to the next blank line."""
    at = prompt.rfind(heading) if last else prompt.find(heading)
    if at < 0:
        return ""
    body = prompt[at + len(heading) :]
    end = _SECTION_END.search(body)
    return body[: end.start()] if end else body


def _items(section: str) -> list[str]:
    return [m.group(1).strip() for line in section.splitlines() if (m := _NUMBERED.match(line))]


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}


def rag_nuggets_responder(prompt: str, model: str = "") -> str | None:
    """Deterministic answers to the TREC RAG nugget prompts, worked out from the prompt (None: another prompt).

    Creation keeps the list so far and adds each new passage's first sentence (at most 12 words) up to the
    maximum; importance is vital for every other nugget by a hash of its text; assignment compares content
    words: support when the answer holds 80% of the nugget's, partial_support from 40%, else not_support.
    Importance and assignment labels are then `varied` by the model per nugget (and answer), so two models
    disagree on a few; the nugget lists are the same for every model.
    """
    if "Update the nugget list" in prompt:
        nuggets = _items(_section(prompt, "Nugget list so far:\n"))
        limit = _MAX_NUGGETS.search(prompt)
        for passage in _items(_section(prompt, "New passages:\n")):
            first = " ".join(re.split(r"(?<=[.!?])\s", passage, maxsplit=1)[0].split()[:12]).rstrip(".")
            if first and first.lower() not in {n.lower() for n in nuggets}:
                nuggets.append(first)
        nuggets = nuggets[: int(limit.group(1))] if limit else nuggets
        return "\n".join(f"{i}. {n}" for i, n in enumerate(nuggets, start=1)) or "No nuggets"
    if "its label (vital or okay)" in prompt:
        nuggets = _items(_section(prompt, "Nuggets:\n", last=True))
        labels = (
            varied(("vital", "okay"), zlib.crc32(n.encode("utf-8")) % 2, model=model, item=n) for n in nuggets
        )
        return "\n".join(f"{i}: {label}" for i, label in enumerate(labels, start=1))
    if "its label (support, partial_support or not_support)" in prompt:
        nuggets = _items(_section(prompt, "Nuggets:\n", last=True))
        text = prompt[prompt.find("Answer:\n") : prompt.rfind("Nuggets:\n")]
        answer = _content_words(text)
        lines = []
        for i, nugget in enumerate(nuggets, start=1):
            words = _content_words(nugget)
            share = len(words & answer) / len(words) if words else 0.0
            level = 2 if share >= 0.8 else 1 if share >= 0.4 else 0
            label = varied(ASSIGNMENT_LABELS, level, model=model, item=f"{text}\n{nugget}")
            lines.append(f"{i}: {label}")
        return "\n".join(lines)
    return None


def count_tokens(text: str) -> int:
    """The fake's tokenizer: one token per whitespace-separated word (tests compute costs from it)."""
    return len(text.split())


@dataclass
class FakeOpenAI:
    responder: Callable[[str], str] = field(default=lambda prompt: "Yes")
    # When set, answers in place of `responder`, from the prompt and the model the request names.
    model_responder: Callable[[str, str], str] | None = None
    latency: float = 0.0
    model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    # The newest requests kept in `received` (None: all, as tests read them); a long-running demo server
    # (`llm_fake_server`) keeps a few, so its memory does not grow with every judge call.
    keep: int | None = None

    def __post_init__(self) -> None:
        if self.host not in LOOPBACK:
            raise ValueError(f"the fake OpenAI server listens on loopback only, not {self.host!r}")
        self.received: list[Received] = []
        self.requests = 0
        self._script: list[Behaviour] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- control ---

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        return f"http://{self.host}:{self._server.server_address[1]}/v1"

    @property
    def answered(self) -> list[Received]:
        """Requests that got a chat completion back (status 200, well formed)."""
        return [r for r in self.received if r.status == 200]

    def answer(self, record: Received) -> str:
        """The responder's answer to a request."""
        if self.model_responder is not None:
            return self.model_responder(record.prompt, record.model)
        return self.responder(record.prompt)

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
                # delayed ACKs add ~40 ms to every answer, which would swamp the scripted latency.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default logging
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                # OpenAI-compatible servers answer at /v1/chat/completions, Azure at
                # /openai/deployments/<deployment>/chat/completions?api-version=...
                if not path.rstrip("/").endswith("/chat/completions"):
                    self._send(
                        404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                    )
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(
                        400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}
                    )
                    return
                record = Received(
                    at=time.monotonic(),
                    body=body,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                )
                with fake._lock:
                    fake.received.append(record)
                    fake.requests += 1
                    if fake.keep is not None and len(fake.received) > fake.keep:
                        del fake.received[: len(fake.received) - fake.keep]
                    behaviour = fake._script.pop(0) if fake._script else None
                if fake.latency:
                    time.sleep(fake.latency)
                if isinstance(behaviour, RateLimited):
                    headers = (
                        {} if behaviour.retry_after is None else {"Retry-After": f"{behaviour.retry_after:g}"}
                    )
                    record.status = 429
                    error = {
                        "message": "Rate limit reached",
                        "type": "requests",
                        "code": "rate_limit_exceeded",
                    }
                    self._send(429, {"error": error}, headers)
                elif isinstance(behaviour, ServerError):
                    record.status = behaviour.status
                    self._send(
                        behaviour.status,
                        {"error": {"message": "The server had an error", "type": "server_error"}},
                    )
                elif isinstance(behaviour, Hang):
                    record.status = -1
                    time.sleep(behaviour.seconds)
                    self._send(504, {"error": {"message": "too late", "type": "server_error"}})
                elif isinstance(behaviour, Malformed):
                    record.status = -2
                    self._send_raw(200, behaviour.body.encode("utf-8"))
                else:
                    text = behaviour.text if isinstance(behaviour, Answer) else fake.answer(record)
                    record.status = 200
                    self._send(200, fake._completion(body, record.prompt, text))

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                self._send_raw(status, json.dumps(payload).encode("utf-8"), headers)

            def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self._server.request_queue_size = 128
        # shutdown() waits for serve_forever's next poll: the default half second would be paid by every test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True, name="fake-openai"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _completion(self, body: dict[str, Any], prompt: str, text: str) -> dict[str, Any]:
        with self._lock:
            number = self.requests
        prompt_tokens, completion_tokens = count_tokens(prompt), count_tokens(text)
        return {
            "id": f"chatcmpl-fake{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name or body.get("model", "fake"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
