"""The production stack (`make serve`: scripts/serve.sh) started for real: PostgreSQL, Redis, gunicorn,
two supervised task workers, DEBUG off. A browser's requests log in and grade one passage through the JSON
endpoints the relevance page uses; an organiser starts one judge job from the Jobs page, which the
workers run against the loopback OpenAI-compatible server; then the stack is stopped.

It runs once, in the PostgreSQL pass of `make test` (marked postgres), on its own database and Redis
databases beside the test cluster's; it is skipped where PostgreSQL or Redis is not there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.judging.fake_openai import FakeOpenAI
from tests.stack_browser import Browser as StackBrowser
from tests.stack_browser import free_port, page_attr, wait_ready

pytestmark = [pytest.mark.stack]

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "smoke-password-1"
SEED = f"""
from django.contrib.auth import get_user_model
from annotation.models import Collection, Passage, Ranking, Run, Topic, Turn
from annotation.relevance.pooling import pool_build
from annotation.relevance.assignments import assignment_create
users = get_user_model()
alice = users.objects.create_user("alice", password="{PASSWORD}")
users.objects.create_user("org", password="{PASSWORD}", is_staff=True)
collection = Collection.objects.create(name="smoke")
run = Run.objects.create(collection=collection, name="bm25")
topic = Topic.objects.create(collection=collection, number="1")
turn = Turn.objects.create(collection=collection, topic=topic, turn_id="1_1", position=1, utterance="Bikes?")
for i in range(2):
    Passage.objects.create(collection=collection, passage_id=f"d:{{i}}", text=f"Bikes, passage {{i}}.")
Ranking.objects.create(run=run, turn=turn, passage_ids=["d:0", "d:1"], scores=[2.0, 1.0])
pool = pool_build(collection=collection, name="smoke", depth=2).pool
print(assignment_create(pool=pool, name="smoke", assessors=[alice], with_ptkb=False).pk)
"""


class Browser(StackBrowser):
    """Behind the TLS proxy `make serve` expects in front: plain HTTP saying what the proxy says."""

    password = PASSWORD

    def extra_headers(self) -> dict[str, str]:
        return {
            "X-Forwarded-Proto": "https",  # what the proxy says; the session cookie is Secure
            "Referer": f"https://127.0.0.1:{self.port}/",  # Django's CSRF check on HTTPS wants it
        }

    def login(self, username: str) -> None:
        super().login(username)
        assert "sessionid" in self.cookies


@pytest.fixture
def stack():
    from django.conf import settings

    database = settings.DATABASES["default"]
    if not shutil.which("redis-server") or not os.environ.get("REDIS_TEST_URL"):
        pytest.skip("needs Redis (make test starts it)")
    redis = urlsplit(os.environ["REDIS_TEST_URL"])
    port, name = free_port(), f"assay_smoke_{os.getpid()}"
    server_url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}"
    database_url = f"{server_url}/{name}"
    # A database of its own on the test run's server, named to serve.sh as production names its server.
    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    fake = FakeOpenAI().start()
    fake.responder = lambda prompt: "Grade: 3"
    env = {
        **os.environ,
        "SERVE_SERVICES": "0",  # the test run's cluster and Redis are up already
        "DATABASE_URL": database_url,
        "SERVE_REDIS_DB": "6",
        "PORT": str(port),
        "SECRET_KEY": "smoke-" + "s" * 60,
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "4",
        "TASK_WORKERS": "2",
        "OPENAI_BASE_URL": fake.url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "gpt-4o-mini",
        "LOG_LEVEL": "INFO",
        "TMP": str(REPO / ".tmp"),
    }
    # DJANGO_ALLOW_ASYNC_UNSAFE is set by the browser tests' Playwright fixtures in this process; the
    # deploy check rightly refuses it, and a production stack never has it.
    for key in (
        "TEST_DATABASE_NAME",
        "CACHE_URL",
        "DEBUG",
        "DJANGO_ALLOW_ASYNC_UNSAFE",
    ):
        env.pop(key, None)
    env["REDIS_PORT"] = str(redis.port)
    log = open(REPO / ".tmp" / f"smoke-{port}.log", "w+")  # noqa: SIM115  (closed below)
    server = subprocess.Popen(
        ["bash", "scripts/serve.sh"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_ready(
            port,
            {"serve.sh": server},
            lambda: log.seek(0) or log.read()[-3000:],
            timeout=120,
            every=0.5,
        )
        seed_env = {**env, "DATABASE_URL": database_url, "DEBUG": "0"}
        seeded = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", SEED],
            cwd=REPO,
            env=seed_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert seeded.returncode == 0, seeded.stderr[-3000:]
        yield {
            "port": port,
            "assignment": int(seeded.stdout.strip().splitlines()[-1]),
            "fake": fake,
            "log": log,
        }
    finally:
        with contextlib.suppress(ProcessLookupError):  # serve.sh may have ended already
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        fake.stop()
        log.close()
        with psycopg.connect(f"{server_url}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_production_stack_serves_grades_and_runs_a_judge_job_on_its_worker(stack):
    port = stack["port"]
    anonymous = Browser(port)
    status, headers, page = anonymous.get("/accounts/login/")
    assert status == 200
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    # Static files from WhiteNoise under their hashed names, with DEBUG off.
    css = re.search(rb'href="(/static/assay\.[0-9a-f]+\.css)"', page)
    assert css is not None
    status, headers, data = anonymous.request("GET", css.group(1).decode())
    assert status == 200 and b"{" in data
    assert "max-age=315360000" in headers["Cache-Control"]
    ready = json.loads(anonymous.request("GET", "/readyz")[2])
    assert ready["checks"] == {"database": "ok", "tasks": "ok"}

    # An assessor: the queue page's "next unit" form, the unit's page, then the page's JSON grade.
    alice = Browser(port)
    alice.login("alice")
    status, headers, page = alice.form(f"/relevance/{stack['assignment']}/next/", {})
    assert status == 302
    status, _h, page = alice.get(urlsplit(headers["Location"]).path)
    assert status == 200
    graded, body = alice.json(
        page_attr(page, "grade-url"),
        {
            "turn_pk": int(page_attr(page, "turn-pk")),
            "passage_id": page_attr(page, "passage-id"),
            "grade": 3,
            "time_spent_ms": 1200,
            "next": True,  # as relevance.js asks: the answer carries the unit's next passage
        },
    )
    assert graded == 201, body
    assert body["next"]["passage_id"] not in ("", page_attr(page, "passage-id"))

    # An organiser starts a relevance job on the Jobs page; a task worker runs it.
    org = Browser(port)
    org.login("org")
    status, _h, _page = org.get("/judging/jobs/")
    assert status == 200
    status, headers, _page = org.form(
        "/judging/jobs/start/",
        {"collection": "smoke", "task": "relevance", "judge_name": "smoke-llm", "depth": 2},
    )
    assert status == 302
    status, _h, page = org.get("/judging/jobs/")
    job = int(re.search(rb'data-job="(\d+)"', page).group(1))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = json.loads(org.request("GET", f"/judging/jobs/{job}/progress.json")[2])
        if progress["status"] not in ("pending", "running"):
            break
        time.sleep(0.5)
    assert (progress["status"], progress["units_done"], progress["calls_made"]) == ("done", 2, 2)
    assert len(stack["fake"].answered) == 2
    stack["log"].seek(0)
    lines = [json.loads(line) for line in stack["log"] if line.startswith("{")]
    assert any(line["logger"] == "gunicorn.access" for line in lines)  # JSON lines from the web server
    # and from the worker: its task, from start to success
    assert any(
        "path=judging.machine.tasks.judge_job_run_task state=SUCCESSFUL" in line["message"] for line in lines
    )

    # Every process of the stack is kept: killed outright, it comes back, and the rest goes on serving.
    for name in ("tasks-1", "web"):
        pid_file = REPO / ".tmp" / f"serve-{port}-{name}.pid"
        killed = int(pid_file.read_text())
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = pid_file.read_text().strip()
            if now and int(now) != killed and Path(f"/proc/{now}").exists():
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"{name} was not started again after kill -9")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if Browser(port).get("/readyz")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.5)
    org = Browser(port)
    org.login("org")
    status, _h, _page = org.form(
        "/judging/jobs/start/",
        {"collection": "smoke", "task": "relevance", "judge_name": "smoke-llm-2", "depth": 2},
    )
    assert status == 302
    status, _h, page = org.get("/judging/jobs/")
    job = max(int(pk) for pk in re.findall(rb'data-job="(\d+)"', page))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = json.loads(org.request("GET", f"/judging/jobs/{job}/progress.json")[2])
        if progress["status"] not in ("pending", "running"):
            break
        time.sleep(0.5)
    assert progress["status"] == "done", progress
