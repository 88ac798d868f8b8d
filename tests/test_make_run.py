"""`make run` as a new organiser uses it (scripts/run.sh, which the Makefile's `run` calls): on a port of its
own, with no LLM endpoint nor MTurk configured, it serves the demo beside a task worker and the loopback
fakes, points the site at them, an LLM judge job runs from the pages alone (on the worker), and stopping the
script stops the server, the worker and the fakes."""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import embedded_db
from crowd.providers.mturk.client import MTurkClient
from tests.conftest import REPO
from tests.test_readme import free_port

# What a user may have set that would point the site elsewhere, and what the test run itself sets.
NOT_INHERITED = re.compile(
    r"^(OPENAI_|AZURE_|MTURK_|AWS_|LOCAL_FAKES$|DEBUG$|SECRET_KEY$|DATABASE_URL$|TEST_DATABASE_NAME$|CACHE_URL$"
    r"|TASK_WORKERS$|ASSAY_BASE_URL$|DJANGO_|FAKES$|HOST$|RUNSERVER_ARGS$|EMBEDDED_PG_)"
)


class Browser:
    """Cookies and CSRF as a browser keeps them, over urllib."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, str]:
        with self.opener.open(self.base + path, timeout=30) as response:
            return response.status, response.read().decode()

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, str]:
        """The status and address of the page the post ends on (redirects followed, as a browser does)."""
        token = next(c.value for c in self.jar if c.name == "csrftoken")
        body = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token}).encode()
        with self.opener.open(self.base + path, data=body, timeout=60) as response:
            return response.status, response.geturl()


def _task_workers(tmp: Path) -> list[int]:
    """The task worker's processes (its keeper and the worker) this run.sh started: their TMP."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:  # not a process, gone, or not ours
            continue
        if b"task_worker" in command and f"TMP={tmp}".encode() in environ:
            found.append(int(proc.name))
    return found


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def make_run(tmp_path: Path) -> Iterator[dict[str, object]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not NOT_INHERITED.match(k)}
    # No DATABASE_URL: run.sh starts the embedded PostgreSQL, here in a folder and on a port of the test's.
    pg_data, pg_port = tmp_path / "postgres", free_port()
    env |= {
        "PORT": str(port),
        "TMP": str(tmp_path),
        "EMBEDDED_PG_DIR": str(pg_data),
        "EMBEDDED_PG_PORT": str(pg_port),
    }
    # A reloading server restarts when any file of the checkout changes, which would cut the job short.
    env["RUNSERVER_ARGS"] = "--noreload"
    log = (tmp_path / "run.log").open("w+")
    script = subprocess.Popen(
        ["bash", "scripts/run.sh"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def output() -> str:
        log.seek(0)
        return log.read()

    try:
        deadline = time.monotonic() + 300
        while not _listening(port):
            assert script.poll() is None, f"run.sh ended:\n{output()[-3000:]}"
            assert time.monotonic() < deadline, f"the server did not come up:\n{output()[-3000:]}"
            time.sleep(0.5)
        yield {"script": script, "port": port, "output": output, "tmp": tmp_path, "pg_port": pg_port}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(script.pid, signal.SIGKILL)
        script.wait()
        log.close()
        embedded_db.stop(data=pg_data)


def test_make_run_serves_beside_the_fakes_runs_an_llm_job_from_the_pages_and_stops_them(make_run):
    script: subprocess.Popen[bytes] = make_run["script"]  # type: ignore[assignment]
    port: int = make_run["port"]  # type: ignore[assignment]
    text: str = make_run["output"]()  # type: ignore[operator]
    llm_url = re.search(r"LLM judges: the local fake at (http://127\.0\.0\.1:\d+/v1)", text)
    mturk_url = re.search(r"MTurk campaigns: the local fake at (http://127\.0\.0\.1:\d+)", text)
    assert llm_url and mturk_url, text[-3000:]
    site = Browser(f"http://127.0.0.1:{port}")

    site.get("/accounts/login/")
    status, landed = site.post("/accounts/login/", {"username": "organiser", "password": "organiser-demo"})
    assert status == 200 and not landed.endswith("/accounts/login/")
    status, jobs = site.get("/judging/jobs/")
    assert status == 200
    assert 'id="llm-local-fake"' in jobs and llm_url.group(1) in jobs
    assert 'id="llm-warning"' not in jobs
    status, landed = site.post(
        "/judging/jobs/start/",
        {
            "collection": "demo",
            "task": "relevance",
            "judge_name": "llm-try",
            "depth": "2",
            "source": "passages",
        },
    )
    job = re.search(r"/judging/jobs/(\d+)/$", landed)
    assert status == 200 and job, landed
    progress_url = f"/judging/jobs/{job.group(1)}/progress.json"
    deadline = time.monotonic() + 120
    while True:
        progress = json.loads(site.get(progress_url)[1])
        if progress["status"] in {"done", "failed", "interrupted"} or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert progress["status"] == "done", progress
    assert progress["calls_made"] > 0 and progress["units_failed"] == 0
    assert MTurkClient(endpoint_url=mturk_url.group(1)).account_balance()
    workers = _task_workers(make_run["tmp"])  # type: ignore[arg-type]
    assert len(workers) == 2, workers  # scripts/keep.sh and the one task worker it keeps

    script.send_signal(signal.SIGTERM)  # the script alone, as `make` passes on a SIGTERM
    assert script.wait(timeout=60) != 0
    ports = [port, *(int(urllib.parse.urlsplit(m.group(1)).port or 0) for m in (llm_url, mturk_url))]
    deadline = time.monotonic() + 20
    while any(_listening(p) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p for p in ports if _listening(p)] == []
    # run.sh started the embedded PostgreSQL, so it stopped it too.
    assert "Database: the embedded PostgreSQL at postgres://" in text
    deadline = time.monotonic() + 20
    while _listening(make_run["pg_port"]) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.2)
    assert not _listening(make_run["pg_port"])  # type: ignore[arg-type]
    deadline = time.monotonic() + 30
    while _task_workers(make_run["tmp"]) and time.monotonic() < deadline:  # type: ignore[arg-type]
        time.sleep(0.2)
    assert _task_workers(make_run["tmp"]) == []  # type: ignore[arg-type]
