"""What the production-stack tests share: a browser's cookies and CSRF over plain http.client, a free
port, and a data attribute read off a page. Each test says how it reaches the server (`connection`,
`extra_headers`) and which password its accounts have."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from urllib.parse import urlencode, urlsplit


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(
    port: int,
    processes: Mapping[str, subprocess.Popen],
    log_tail: Callable[[], str],
    *,
    timeout: float = 60,
    every: float = 0.2,
) -> None:
    """Until plain http to 127.0.0.1:`port` answers /readyz with 200; fails at once, with the log's
    tail, when one of `processes` has ended, and after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in processes.items():
            assert process.poll() is None, f"{name} ended: {log_tail()}"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(every)
    raise AssertionError(f"127.0.0.1:{port} did not become ready in {timeout:.0f} s: {log_tail()}")


def page_attr(page: bytes, name: str) -> str:
    found = re.search(rb"data-" + name.encode() + rb'="([^"]*)"', page)
    assert found is not None, f"no data-{name} on the page"
    return found.group(1).decode()


class Browser:
    """Cookies and CSRF as a browser keeps them."""

    password = ""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def extra_headers(self) -> dict[str, str]:
        return {}

    def answered(self, response: http.client.HTTPResponse) -> None:
        """Called with each response (after its body is read)."""

    def request(self, method: str, url: str, body: bytes | None = None, headers: dict | None = None):
        conn = self.connection()
        headers = {**self.extra_headers(), **(headers or {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        conn.request(method, url, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        self.answered(response)
        for value in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, response.headers, data

    def get(self, url: str):
        status, headers, data = self.request("GET", url)
        while status in (301, 302):
            status, headers, data = self.request("GET", urlsplit(headers["Location"]).path)
        return status, headers, data

    def form(self, url: str, fields: dict):
        body = urlencode({"csrfmiddlewaretoken": self.cookies["csrftoken"], **fields}).encode()
        return self.request("POST", url, body, {"Content-Type": "application/x-www-form-urlencoded"})

    def json(self, url: str, payload: dict):
        headers = {"Content-Type": "application/json", "X-CSRFToken": self.cookies["csrftoken"]}
        status, _headers, data = self.request("POST", url, json.dumps(payload).encode(), headers)
        return status, (json.loads(data) if data else None)

    def login(self, username: str) -> None:
        assert self.get("/accounts/login/")[0] == 200
        status, _headers, _page = self.form(
            "/accounts/login/", {"username": username, "password": self.password}
        )
        assert status == 302, f"login as {username}: {status}"
