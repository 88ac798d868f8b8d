"""A local MTurk-compatible server, so the crowd flow runs end to end without AWS.

It speaks the requester API's JSON 1.1 protocol on loopback (`POST /` with
`X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>`), checks every request against botocore's own
service model for MTurk (unknown parameters, missing required ones and wrong types answer 400 as MTurk
does), and keeps its state in memory. moto has no MTurk backend, and MTurk no longer takes new requester
accounts, so this is how the flow is tried in tests and in the demo.
This module is the HTTP side; the state and the operations it serves are in devtools/mturk_server_ops.py.

The worker side stands in for the MTurk website:
- `GET /worker/preview?hitId=H` redirects to the HIT's ExternalURL in the preview state
  (`assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`);
- `GET /worker/accept?hitId=H&workerId=W` accepts the HIT for a worker and redirects to the ExternalURL
  with `assignmentId`, `hitId`, `workerId` and `turkSubmitTo`;
- `GET /worker/frame?hitId=H[&workerId=W]` answers a page of the fake's own origin that frames the
  ExternalURL as MTurk's worker site does: accepted for W when given, in the preview state otherwise;
- `POST /worker/qualify` takes a qualification test for a worker (`qualificationTypeId`, `workerId`, and
  each QuestionIdentifier with the SelectionIdentifier chosen), grades it with the type's AnswerKey and
  keeps the score as the worker's qualification value; accepting a HIT then checks its requirements;
- `POST /mturk/externalSubmit` takes the worker page's form (must carry `assignmentId`) and stores the other
  fields as the assignment's QuestionFormAnswers XML.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

# Tests and the proxy reach the fake's parts through this module, the one that serves them.
from devtools.mturk_server_ops import (
    ANSWER_NS,
    NOT_AVAILABLE,
    TARGET_PREFIX,
    FakeError,
    FakeMTurk,
    FakeState,
    answer_xml,
)

__all__ = [
    "ANSWER_NS",
    "NOT_AVAILABLE",
    "TARGET_PREFIX",
    "FakeError",
    "FakeMTurk",
    "FakeMTurkServer",
    "FakeState",
    "answer_xml",
]


def _frame_page(url: str) -> str:
    """The worker site's task page: the HIT's ExternalURL in an iframe, as MTurk shows it."""
    src = escape(url, {'"': "&quot;"})
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Fake MTurk task</title></head>'
        "<body><h1>Fake MTurk worker site</h1>"
        f'<iframe id="mturk-frame" src="{src}" width="100%" height="900" style="border:0"></iframe>'
        "</body></html>"
    )


def _make_handler(fake: FakeMTurk) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
            return

        def _send(
            self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            self._send(status, json.dumps(payload).encode(), "application/x-amz-json-1.1")

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def do_POST(self) -> None:  # noqa: N802 (stdlib name)
            path = urlsplit(self.path).path
            body = self._body()
            if path == "/mturk/externalSubmit":
                fields = {k: v[-1] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
                try:
                    assignment_id = fake.external_submit(fields)
                except FakeError as exc:
                    self._send(exc.status, escape(exc.message).encode(), "text/plain; charset=utf-8")
                    return
                self._send(200, f"Assignment {assignment_id} submitted".encode(), "text/html; charset=utf-8")
                return
            if path == "/worker/qualify":
                fields = {k: v[-1] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
                qual_id, worker_id = fields.pop("qualificationTypeId", ""), fields.pop("workerId", "")
                try:
                    if not worker_id:
                        raise FakeError("RequestError", "taking a test needs the workerId")
                    value = fake.worker_take_test(qual_id, worker_id, fields)
                except FakeError as exc:
                    self._send(exc.status, escape(exc.message).encode(), "text/plain; charset=utf-8")
                    return
                self._send(200, f"Qualification value {value}".encode(), "text/plain; charset=utf-8")
                return
            target = self.headers.get("X-Amz-Target", "")
            if path != "/" or not target.startswith(TARGET_PREFIX):
                self._json(400, {"__type": "UnknownOperationException", "Message": f"bad target {target!r}"})
                return
            try:
                params = json.loads(body or b"{}")
                if not isinstance(params, dict):
                    raise FakeError("SerializationException", "body must be a JSON object")
                self._json(200, fake.handle(target[len(TARGET_PREFIX) :], params))
            except json.JSONDecodeError:
                self._json(400, {"__type": "SerializationException", "Message": "body is not JSON"})
            except FakeError as exc:
                self._json(exc.status, {"__type": exc.code, "Message": exc.message})

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            try:
                if parts.path == "/worker/accept":
                    location = fake.worker_accept(query.get("hitId", ""), query.get("workerId", ""))
                elif parts.path == "/worker/preview":
                    location = fake.worker_preview(query.get("hitId", ""))
                elif parts.path == "/worker/frame":
                    hit_id, worker_id = query.get("hitId", ""), query.get("workerId", "")
                    framed = (
                        fake.worker_accept(hit_id, worker_id) if worker_id else fake.worker_preview(hit_id)
                    )
                    self._send(200, _frame_page(framed).encode(), "text/html; charset=utf-8")
                    return
                else:
                    self._send(404, b"not found", "text/plain")
                    return
            except FakeError as exc:
                self._send(exc.status, escape(exc.message).encode(), "text/plain; charset=utf-8")
                return
            self._send(302, b"", "text/plain", {"Location": location})

    return Handler


class FakeMTurkServer:
    """The fake on a loopback port, served from a background thread; use as a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in {"127.0.0.1", "localhost", "::1"}:
            raise ValueError("the fake MTurk server listens on loopback only")
        self.fake = FakeMTurk()
        self.httpd = ThreadingHTTPServer((host, port), _make_handler(self.fake))
        self.httpd.daemon_threads = True
        self.fake.submit_origin = self.url
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = str(self.httpd.server_address[0]), self.httpd.server_address[1]
        return f"http://{host}:{port}"

    @property
    def state(self) -> FakeState:
        return self.fake.state

    def start(self) -> FakeMTurkServer:
        # stop() waits for serve_forever's next poll: the default half second would be paid by every test.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-mturk", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeMTurkServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
