"""A loopback HTTP proxy in front of the local MTurk fake that can lose answers on the way back.

MTurk may carry out a request whose answer never reaches us (a dropped connection, a timeout). The proxy
forwards every request to the upstream server and, for the operations it is told to, closes the client's
connection instead of handing the answer back: the request took effect upstream, the caller sees a
connection closed without a response. Tests use it to show that a retried call recovers.
"""

from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from devtools.mturk_server import TARGET_PREFIX

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class DroppingProxy:
    """Forward to `upstream`; drop the answers of the next N calls of each operation in `drop`."""

    def __init__(self, upstream: str, *, drop: dict[str, int] | None = None, host: str = "127.0.0.1") -> None:
        if host not in {"127.0.0.1", "localhost", "::1"}:
            raise ValueError("the proxy listens on loopback only")
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.pending = dict(drop or {})
        self.dropped: list[str] = []
        self.forwarded: list[str] = []
        self.lock = threading.Lock()
        self.host = host
        self.httpd = ThreadingHTTPServer((host, 0), self._handler())
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.httpd.server_address[1]}"

    def _should_drop(self, operation: str) -> bool:
        with self.lock:
            self.forwarded.append(operation)
            if self.pending.get(operation, 0) > 0:
                self.pending[operation] -= 1
                self.dropped.append(operation)
                return True
            return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
                return

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=30)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    payload = answer.read()
                finally:
                    upstream.close()
                target = self.headers.get("X-Amz-Target", "")
                operation = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else self.path
                if proxy._should_drop(operation):
                    # The request took effect upstream; the caller hears nothing back.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward  # noqa: N815 (stdlib names)

        return Handler

    def start(self) -> DroppingProxy:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="mturk-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> DroppingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
