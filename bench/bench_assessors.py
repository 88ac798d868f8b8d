"""Figure: 50 simulated assessors against gunicorn + PostgreSQL: every path a person or a script grades
through (the page, the API's `next` + `grade` pair, the API's grade with next) beside a trivial view.

One invocation, four kinds of client, each through the same closed-loop harness:

- browser: what the relevance page and its script (static/js/relevance.js) send. Each assessor is signed
  in once (a session made for them, as the login form makes it: its deliberate password hashing is not
  what is measured); per unit it posts the "Get next unit" form and follows its redirect to the unit's
  page (the resume URL, which shows the first open screen: one HTML load per unit); then, per judgment,
  one JSON grade whose answer carries the unit's next passage (`"next": true`), with the session cookie
  and the CSRF token in the X-CSRFToken header; when the answer says the unit is complete it opens the
  queue page, as the script does.
- api pair: the plain scripted client, `Authorization: Token`: per judgment a `next` call (which leases
  and closes units on the way) and a `grade` without `next`.
- api with next: the same client saving a request: one grade with `"next": true` per judgment, and a
  next call per unit (to lease it).
- trivial: two JSON POSTs to a view that does nothing, as the baseline, measured beside each path: each
  path's run is cut into slices (--slices), each after a slice of the trivial view.

Each kind has its own assessors and assignment over the same pool, and all run against one server in
its default configuration; the goals are checked on each path.

Each path first runs for a few seconds unmeasured (--warmup-seconds), and then the database is analyzed
as autovacuum does soon after a campaign's first grades: what is measured is the steady state, not the
server's warm-up nor plans made for an empty judgments table.

Throughput is measured with no think time (each client sends its next request the moment it has an
answer), which queues 50 clients behind two shared cores: latency there is the queue, and the trivial
view's own p95 passes 200 ms under load. So the latency goal is measured in a second, paced run of each
path: the same 50 assessors each pause for an exponential think time after a judgment (mean --think-s, 2 s:
people take several times longer to read a passage), and p95 is taken over those judgments.
Sessions are cached in Redis (CACHE_URL, as `make serve` runs) when the Redis of `make services` answers
(BENCH_CACHE_URL names another; BENCH_CACHE_URL=none keeps them in the database); its CPU is counted.

For each it prints throughput, latency (p50 / p95 of a judgment: the requests between two passages), and
server CPU per judgment (the gunicorn processes, the PostgreSQL backends of the bench database and the
Redis server, from /proc), the ratios the goals are stated in, and checks that every 2xx submit was
stored exactly once.

It creates its own database on the PostgreSQL server (BENCH_PG_URL; by default the embedded cluster `make
services` starts, over loopback TCP) and drops it at the end.

    .venv/bin/python bench/bench_assessors.py [--assessors 50] [--seconds 30] [--trivial-seconds 20]
    BENCH_SECONDS=8 BENCH_TRIVIAL_SECONDS=6 .venv/bin/python bench/bench_assessors.py   # a quick run
    BENCH_DB_POOL=0 ...   # the server on persistent connections (one per thread) instead of Django's pool
    .venv/bin/python bench/bench_assessors.py --scale 10 --slices 6 --seconds 60 --trivial-seconds 36

With `--scale N` it measures the page path (the browser kind) on two databases at once, each with its own
server: a collection at the base size (--scale-turns turns of --scale-per-turn pooled passages, 30,000
passages, 9 runs, 10 other assessors who did 60% of an earlier assignment in two copies, 5 machine judges
that graded every pooled pair) and the same N times over (at 10: 2,200 turns, a pool of 110,000 pairs,
300,000 passages, 90 runs, 100 other assessors, about 680,000 judgments by other judges), the bench's
assessors on a fresh assignment of each. The slices alternate between the two, each after a slice of the
trivial view on the same server, and each browser goes on from the unit on its screen from one slice to
the next (one unit page per unit, as a person loads them). It prints each scale's judgments/s as a ratio
to its trivial view and the ratio between scales (goal >= 0.9).

Imported by gunicorn (as `bench_assessors:application`) it serves the project plus /bench/trivial/.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import re
import runpy
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parent.parent
_PG_PORT = os.environ.get("PG_PORT", "55432")
PG_URL = os.environ.get("BENCH_PG_URL") or f"postgres://assay@127.0.0.1:{_PG_PORT}/assay"
HOST, PORT = "127.0.0.1", int(os.environ.get("BENCH_PORT", "58123"))
# Where the bench's server answers the assessor endpoints without remembered users ("plain" kinds).
PLAIN = "bench/plain"
PASSWORD = "bench-password-1"

if os.environ.get("BENCH_ASSESSORS_SERVE") == "1":
    # Inside gunicorn (which sets the flag): the project's URLs plus one trivial view, routed by this module.
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.wsgi import get_wsgi_application
    from django.http import HttpRequest, HttpResponse
    from django.urls import include, path
    from django.views.decorators.csrf import csrf_exempt

    @csrf_exempt
    def trivial(request: HttpRequest) -> HttpResponse:
        return HttpResponse(b'{"ok": true}', content_type="application/json")

    from annotation.relevance.api import GradeApi, NextPassageApi

    # The same two assessor endpoints with every request's user read from the database, as DRF does by
    # itself: what the users remembered between requests (core.remembered) are measured against.
    class PlainNextPassageApi(NextPassageApi):
        remember_users = False

    class PlainGradeApi(GradeApi):
        remember_users = False

    urlpatterns = [
        path("bench/trivial/", trivial),
        path(f"{PLAIN}/relevance/api/<int:assignment_pk>/next/", PlainNextPassageApi.as_view()),
        path(f"{PLAIN}/relevance/api/work/<int:slot_pk>/grade/", PlainGradeApi.as_view()),
        path("", include("assay.urls")),
    ]
    settings.ROOT_URLCONF = __name__
    application = get_wsgi_application()


def _database_create(name: str) -> str:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return _database_url(name)


def _database_url(name: str) -> str:
    return PG_URL.rsplit("/", 1)[0] + "/" + name


def _database_drop(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Seeded:
    pair_assignment: int
    api_assignment: int
    browser_assignment: int
    pair_tokens: list[str]
    tokens: list[str]
    browser_users: list[int]
    # The same three kinds of assessor on the endpoints without remembered users: kind -> (credentials or
    # user pks, assignment), empty unless compared.
    plain: dict[str, tuple[list[Any], int]] = field(default_factory=dict)


def _seed(n_assessors: int, n_turns: int, per_turn: int, plain: bool) -> Seeded:
    """One pool of n_turns x per_turn pairs, handed by turn to three groups of n_assessors: the API pair,
    the API with next, and the browser (and three more for the endpoints without remembered users)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from rest_framework.authtoken.models import Token

    from annotation.relevance.assignments import assignment_create
    from devtools.load_data import load_pool_build

    pool = load_pool_build(name="bench", n_turns=n_turns, per_turn=per_turn)
    # One password hash for everyone: hashing is deliberately slow, and it is not what is measured.
    hashed = make_password(PASSWORD)
    user_model = get_user_model()
    api_users = user_model.objects.bulk_create(
        [user_model(username=f"api{i}", password=hashed) for i in range(n_assessors)]
    )
    browser_users = user_model.objects.bulk_create(
        [user_model(username=f"browser{i}", password=hashed) for i in range(n_assessors)]
    )
    pair_users = user_model.objects.bulk_create(
        [user_model(username=f"pair{i}", password=hashed) for i in range(n_assessors)]
    )
    api = assignment_create(pool=pool, name="bench-api", assessors=api_users, with_ptkb=False)
    browser = assignment_create(pool=pool, name="bench-browser", assessors=browser_users, with_ptkb=False)
    pair = assignment_create(pool=pool, name="bench-api-pair", assessors=pair_users, with_ptkb=False)
    seeded = Seeded(
        pair.pk,
        api.pk,
        browser.pk,
        [Token.objects.create(user=user).key for user in pair_users],
        [Token.objects.create(user=user).key for user in api_users],
        [u.pk for u in browser_users],
    )
    for kind in ("browser", "pair", "api") if plain else ():
        users = user_model.objects.bulk_create(
            [user_model(username=f"plain{kind}{i}", password=hashed) for i in range(n_assessors)]
        )
        work = assignment_create(pool=pool, name=f"bench-plain-{kind}", assessors=users, with_ptkb=False)
        credentials: list[Any] = (
            [u.pk for u in users]
            if kind == "browser"
            else [Token.objects.create(user=user).key for user in users]
        )
        seeded.plain[f"plain{kind}"] = (credentials, work.pk)
    return seeded


def _serve(
    database_url: str,
    secret_key: str,
    args: argparse.Namespace,
    connections: int,
    port: int = PORT,
    cache_url: str | None = None,
) -> subprocess.Popen:
    env = dict(
        os.environ,
        BENCH_ASSESSORS_SERVE="1",
        DATABASE_URL=database_url,
        DEBUG="0",
        SECRET_KEY=secret_key,
        SECURE_COOKIES="0",  # plain HTTP on loopback
        # Django's pool: as many connections as a worker has threads.
        DB_POOL="1",
        DB_POOL_MAX_SIZE=str(args.threads),
        LOG_LEVEL="ERROR",
    )
    env.pop("DB_CONN_MAX_AGE", None)
    if cache_url is not None:
        env["CACHE_URL"] = cache_url
    if os.environ.get("BENCH_DB_POOL") == "0":  # persistent connections instead, one per thread
        env.update(DB_POOL="0", DB_CONN_MAX_AGE="600")
    command = [
        str(REPO / ".venv" / "bin" / "gunicorn"),
        "bench_assessors:application",
        "--chdir",
        str(REPO / "bench"),
        "--bind",
        f"{HOST}:{port}",
        "--worker-class",
        "gthread",
        "--workers",
        str(args.workers),
        "--threads",
        str(args.threads),
        "--worker-connections",
        str(connections),
        "--keep-alive",
        str(args.keep_alive),
        "--backlog",
        "2048",
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/bench/trivial/")
            if conn.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("gunicorn did not come up")


# --- Server CPU, from /proc -------------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _server_cpu(server_pgid: int, db_name: str, redis_title: str) -> dict[tuple[str, int], float]:
    """CPU seconds so far of each gunicorn process, each PostgreSQL backend of the bench database and the
    Redis server (`redis_title`: its process title; "" for none)."""
    cpu: dict[tuple[str, int], float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pgrp, utime, stime = int(fields[2]), int(fields[11]), int(fields[12])
        # A backend's title: "postgres: <user> <database> <client> <state>".
        if pgrp == server_pgid:
            cpu[("gunicorn", int(entry.name))] = (utime + stime) / _TICK
        elif cmdline.startswith("postgres: ") and f" {db_name} " in cmdline:
            cpu[("postgres", int(entry.name))] = (utime + stime) / _TICK
        elif redis_title and cmdline.strip() == redis_title:
            cpu[("redis", int(entry.name))] = (utime + stime) / _TICK
    return cpu


def _cpu_spent(
    before: dict[tuple[str, int], float], after: dict[tuple[str, int], float]
) -> tuple[float, float, float]:
    """(gunicorn, PostgreSQL, Redis) CPU seconds spent between the two readings.

    A process that started in between counts in full; one that ended in between is lost (the pool
    keeps its connections, so the backends live through a phase)."""
    spent = {"gunicorn": 0.0, "postgres": 0.0, "redis": 0.0}
    for key, seconds in after.items():
        spent[key[0]] += seconds - before.get(key, 0.0)
    return spent["gunicorn"], spent["postgres"], spent["redis"]


# --- Clients ----------------------------------------------------------------------------------------


@dataclass
class ClientResult:
    """What one simulated client saw: judgment latencies (s), unit page loads (s), 2xx submits, errors."""

    latencies: list[float] = field(default_factory=list)
    unit_loads: list[float] = field(default_factory=list)
    queue_loads: list[float] = field(default_factory=list)
    submitted_2xx: int = 0
    granted: list[tuple[str, int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ended_at: float = 0.0
    index: int = 0  # the client's place in the credentials it was started with
    # A browser's state when it stopped (the unit on its screen, its cookies), to go on from in the next run.
    carried: dict[str, Any] = field(default_factory=dict)


class Browser:
    """A cookie jar on one HTTP connection, enough for a signed-in browser session."""

    def __init__(self) -> None:
        self.conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, url: str, body: bytes | None = None, headers: dict | None = None) -> tuple:
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.conn.request(method, url, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        for value in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, response.headers, data

    def follow(self, status: int, headers: Any, data: bytes) -> tuple:
        while status in (301, 302, 303):
            status, headers, data = self.request("GET", headers["Location"])
        return status, headers, data


_CSRF_INPUT = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def _browser_session(user_pk: int) -> dict[str, str]:
    """The cookies of a browser signed in as the user: a session as `login()` makes it, and the CSRF
    cookie the login page sets."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.base import SessionBase
    from django.utils.module_loading import import_string

    user = get_user_model().objects.get(pk=user_pk)
    session: SessionBase = import_string(f"{settings.SESSION_ENGINE}.SessionStore")()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    browser = Browser()
    status, _headers, _page = browser.request("GET", "/accounts/login/")
    if status != 200 or "csrftoken" not in browser.cookies:
        raise SystemExit(f"login page: {status}")
    browser.conn.close()
    assert session.session_key is not None
    return {"csrftoken": browser.cookies["csrftoken"], settings.SESSION_COOKIE_NAME: session.session_key}


def _attr(page: bytes, name: str) -> str:
    found = re.search(rb"data-" + name.encode() + rb'="([^"]*)"', page)
    if found is None:
        raise ValueError(f"no data-{name} on the page")
    return found.group(1).decode()


@dataclass
class BrowserState:
    assignment_pk: int
    browser: Browser
    csrf: str = ""
    slot: int = 0
    grade_url: str = ""
    resume_url: str = ""
    step: tuple[int, str] | None = None  # (turn_pk, passage_id) on screen
    done: bool = False
    prefix: str = ""  # before the grade URL: "/bench/plain" for the endpoint without remembered users


def _browser_unit(state: BrowserState, out: ClientResult) -> None:
    """ "Get next unit" on the queue page, then the unit's page: one HTML load per unit."""
    started = time.perf_counter()
    b = state.browser
    form = urlencode({"csrfmiddlewaretoken": b.cookies["csrftoken"]}).encode()
    status, headers, page = b.request(
        "POST",
        f"/relevance/{state.assignment_pk}/next/",
        form,
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    if status == 302 and headers["Location"].rstrip("/").endswith("/relevance"):
        state.done = True  # no work left: the queue page says so
        b.follow(status, headers, page)
        return
    status, headers, page = b.follow(status, headers, page)
    if status != 200:
        raise ValueError(f"unit page {status}")
    state.csrf = _CSRF_INPUT.search(page).group(1).decode()  # type: ignore[union-attr]
    state.slot = int(_attr(page, "slot"))
    state.grade_url = state.prefix + _attr(page, "grade-url")
    state.resume_url = _attr(page, "resume-url")
    state.step = (int(_attr(page, "turn-pk")), _attr(page, "passage-id"))
    out.unit_loads.append(time.perf_counter() - started)


def _browser_loop(state: BrowserState, out: ClientResult) -> bool:
    """One judgment as relevance.js makes it: the JSON grade, whose answer carries the next passage."""
    if state.step is None:
        _browser_unit(state, out)
        if state.done:
            return False
    assert state.step is not None
    started = time.perf_counter()
    headers = {"Content-Type": "application/json", "X-CSRFToken": state.csrf}
    turn_pk, passage_id = state.step
    grade = {"turn_pk": turn_pk, "passage_id": passage_id, "grade": 2, "time_spent_ms": 1500, "next": True}
    status, _h, body = state.browser.request("POST", state.grade_url, json.dumps(grade).encode(), headers)
    out.latencies.append(time.perf_counter() - started)
    if status != 201:
        out.errors.append(f"grade {status} {body[:200]!r}")
        return False
    out.submitted_2xx += 1
    out.granted.append((str(state.slot), turn_pk, passage_id))
    answer = json.loads(body)
    step = answer["next"]
    if step is not None:
        state.step = (step["turn_pk"], step["passage_id"])
        return True
    # The unit is done: the script opens the queue page (the resume URL, were a PTKB step left).
    started = time.perf_counter()
    url = "/relevance/" if answer["unit_complete"] else state.resume_url
    status, _h, _page = state.browser.follow(*state.browser.request("GET", url))
    out.queue_loads.append(time.perf_counter() - started)
    if status != 200:
        out.errors.append(f"queue {status}")
        return False
    state.step = None
    return True


def _post(conn: http.client.HTTPConnection, url: str, body: dict, headers: dict) -> tuple[int, bytes]:
    conn.request("POST", url, body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


@dataclass
class ApiState:
    step: dict | None = None  # the passage to grade next, as the last answer gave it


def _api_loop(
    conn: http.client.HTTPConnection,
    headers: dict,
    assignment_pk: int,
    state: ApiState,
    out: ClientResult,
    prefix: str = "",
) -> bool:
    """One judgment of a scripted client: a grade whose answer carries the next passage, after a next
    call when the unit is new (it leases the unit; the last grade of the previous one closed it)."""
    started = time.perf_counter()
    if state.step is None:
        status, body = _post(conn, f"{prefix}/relevance/api/{assignment_pk}/next/", {}, headers)
        if status == 204:
            return False
        if status != 200:
            out.errors.append(f"next {status} {body[:200]!r}")
            return False
        state.step = json.loads(body)
    step = state.step
    grade = {
        "turn_pk": step["turn_pk"],
        "passage_id": step["passage_id"],
        "grade": 2,
        "time_spent_ms": 1,
        "next": True,
    }
    status, body = _post(conn, f"{prefix}/relevance/api/work/{step['slot']}/grade/", grade, headers)
    answer = json.loads(body)
    out.latencies.append(time.perf_counter() - started)
    if 200 <= status < 300:
        out.submitted_2xx += 1
        out.granted.append((headers["Authorization"], step["turn_pk"], step["passage_id"]))
        state.step = answer["next"]
    else:
        out.errors.append(f"grade {status} {body[:200]!r}")
        state.step = None
    return True


def _pair_loop(
    conn: http.client.HTTPConnection, headers: dict, assignment_pk: int, out: ClientResult, prefix: str = ""
) -> bool:
    """One judgment of the simplest scripted client: the next call, then the grade without next."""
    started = time.perf_counter()
    status, body = _post(conn, f"{prefix}/relevance/api/{assignment_pk}/next/", {}, headers)
    if status == 204:
        return False
    if status != 200:
        out.errors.append(f"next {status} {body[:200]!r}")
        return False
    step = json.loads(body)
    grade = {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2, "time_spent_ms": 1}
    status, body = _post(conn, f"{prefix}/relevance/api/work/{step['slot']}/grade/", grade, headers)
    json.loads(body)
    out.latencies.append(time.perf_counter() - started)
    if status != 201:
        out.errors.append(f"grade {status} {body[:200]!r}")
        return True
    out.submitted_2xx += 1
    out.granted.append((headers["Authorization"], step["turn_pk"], step["passage_id"]))
    return True


def _trivial_loop(conn: http.client.HTTPConnection, headers: dict, out: ClientResult) -> bool:
    """The shape of an API judgment (two JSON POSTs, both answers parsed) on a view that does nothing."""
    started = time.perf_counter()
    for _ in range(2):
        status, body = _post(conn, "/bench/trivial/", {}, headers)
        json.loads(body)
        if status != 200:
            out.errors.append(f"trivial {status} {body[:200]!r}")
            return False
    out.latencies.append(time.perf_counter() - started)
    return True


def _client_process(
    kind: str,
    credentials: list[Any],
    assignment_pk: int,
    start_at: float,
    stop_at: float,
    queue: Any,
    think_s: float = 0.0,
    indexes: list[int] | None = None,
    carried: list[dict[str, Any]] | None = None,
) -> None:
    """A client process: one thread per simulated client, each looping until `stop_at` (wall clock),
    pausing after each judgment for an exponential think time of mean `think_s` (0: none). A browser
    given its `carried` state goes on with the unit on its screen instead of asking for one."""
    results = [ClientResult(index=i) for i in indexes or range(len(credentials))]
    carried = carried or [{} for _ in credentials]
    prefix = f"/{PLAIN}" if kind.startswith("plain") else ""
    kind = kind.removeprefix("plain")

    def run(credential: Any, out: ClientResult, before: dict[str, Any]) -> None:
        pace = random.Random(hash(str(credential)))
        conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
        state = None
        api_state = ApiState()
        if kind == "browser":
            browser = Browser()
            browser.cookies = dict(before.get("cookies") or credential)
            state = BrowserState(assignment_pk=assignment_pk, browser=browser, prefix=prefix)
            for name in ("csrf", "slot", "grade_url", "resume_url", "step"):
                if name in before:
                    setattr(state, name, before[name])
        headers = {"Authorization": f"Token {credential}", "Content-Type": "application/json"}
        # Paced, people arrive at their own moments, not all at the first instant.
        time.sleep(max(0.0, start_at - time.time()) + (pace.uniform(0, 2 * think_s) if think_s else 0.0))
        while time.time() < stop_at:
            try:
                if state is not None:
                    going = _browser_loop(state, out)
                elif kind == "api":
                    going = _api_loop(conn, headers, assignment_pk, api_state, out, prefix)
                elif kind == "pair":
                    going = _pair_loop(conn, headers, assignment_pk, out, prefix)
                else:
                    going = _trivial_loop(conn, headers, out)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                out.errors.append(f"{type(exc).__name__}: {exc}")
                (state.browser.conn if state is not None else conn).close()
                going = True
            if not going:
                break
            if think_s:
                time.sleep(min(pace.expovariate(1 / think_s), max(0.0, stop_at - time.time())))
        out.ended_at = time.time()
        conn.close()
        if state is not None:
            out.carried = {
                "cookies": state.browser.cookies,
                "csrf": state.csrf,
                "slot": state.slot,
                "grade_url": state.grade_url,
                "resume_url": state.resume_url,
                "step": state.step,
            }

    threads = [
        threading.Thread(target=run, args=(c, r, b), daemon=True)
        for c, r, b in zip(credentials, results, carried, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(results)


@dataclass
class Phase:
    results: list[ClientResult]
    elapsed: float
    web_cpu: float
    db_cpu: float
    cache_cpu: float

    @property
    def cpu(self) -> float:
        return self.web_cpu + self.db_cpu + self.cache_cpu

    @property
    def latencies(self) -> list[float]:
        return [x for r in self.results for x in r.latencies]

    @property
    def per_s(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu / len(self.latencies) * 1000 if self.latencies else 0.0

    @property
    def errors(self) -> list[str]:
        return [e for r in self.results for e in r.errors]

    @property
    def carried(self) -> list[dict[str, Any]]:
        return [r.carried for r in self.results]


def _merged(phases: list[Phase]) -> Phase:
    return Phase(
        [r for p in phases for r in p.results],
        sum(p.elapsed for p in phases),
        sum(p.web_cpu for p in phases),
        sum(p.db_cpu for p in phases),
        sum(p.cache_cpu for p in phases),
    )


def _load(
    kind: str,
    credentials: list[Any],
    assignment_pk: int,
    seconds: float,
    processes: int,
    cpu_of: Any,
    think_s: float = 0.0,
    carried: list[dict[str, Any]] | None = None,
) -> Phase:
    """Run len(credentials) closed-loop clients spread over `processes` client processes (with
    `think_s`, each pausing that long on average after each judgment, as a person reads the next passage).
    `carried`: each browser's state at the end of an earlier run (Phase.carried), to go on from.

    The same harness for every kind, so that ratios compare what the server does, not the clients;
    clients live in their own processes so that one Python process's GIL is not what is measured.
    """
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    start_at = time.time() + 1.0
    stop_at = start_at + seconds
    indexes = list(range(len(credentials)))
    carried = carried or [{} for _ in credentials]
    workers = [
        context.Process(
            target=_client_process,
            args=(kind, credentials[i::processes], assignment_pk, start_at, stop_at, queue, think_s),
            kwargs={"indexes": indexes[i::processes], "carried": carried[i::processes]},
        )
        for i in range(processes)
        if credentials[i::processes]
    ]
    for w in workers:
        w.start()
    time.sleep(max(0.0, start_at - time.time()))
    cpu_before = cpu_of()
    results = sorted((r for _ in workers for r in queue.get()), key=lambda r: r.index)
    cpu_after = cpu_of()
    for w in workers:
        w.join()
    return Phase(results, max(r.ended_at for r in results) - start_at, *_cpu_spent(cpu_before, cpu_after))


# --- At scale: the page path on a small and a bigger collection, side by side ------------------------


def _aim(port: int) -> None:
    """Point this process's clients (and the processes it forks next) at the server on `port`."""
    global PORT
    PORT = port


def _use(db_name: str) -> None:
    """Point this process's Django connection at the database `db_name`."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = db_name


def _scale_seed(scale: int, n_assessors: int, turns: int, per_turn: int) -> tuple[list[int], int, str]:
    """A collection `scale` times the base size with what other people and machines did in it, and the
    bench's assessors on a fresh assignment of its pool: (their user pks, the assignment, a summary).

    Made by the project's builders where they are the path (the pool, the assignments) and by bulk
    INSERT ... SELECT for the rest, which only has to be there: the other assessors' copies and grades,
    the machine judges' grades, the runs and the passages no run ranked."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection

    from annotation.models import Judge, Passage, Ranking, RelevanceJudgment, Run
    from annotation.relevance.assignments import assignment_create
    from annotation.relevance.models import PoolEntry, WorkSlot, WorkUnit
    from devtools.load_data import load_pool_build

    n_turns = turns * scale
    pool = load_pool_build(name="track", n_turns=n_turns, per_turn=per_turn)
    hashed = make_password(PASSWORD)
    user_model = get_user_model()
    others = user_model.objects.bulk_create(
        [user_model(username=f"other{i}", password=hashed) for i in range(10 * scale)]
    )
    Judge.objects.bulk_create(
        [Judge(name=f"other{i}", kind=Judge.Kind.ASSESSOR, user=user) for i, user in enumerate(others)]
    )
    Judge.objects.bulk_create([Judge(name=f"llm{i}", kind=Judge.Kind.LLM, model="fake") for i in range(5)])
    earlier = assignment_create(pool=pool, name="earlier", assessors=others, redundancy=2, with_ptkb=False)
    Run.objects.bulk_create(
        [Run(collection=pool.collection, name=f"run{i}", source_format="trec") for i in range(9 * scale - 1)]
    )
    users = user_model.objects.bulk_create(
        [user_model(username=f"browser{i}", password=hashed) for i in range(n_assessors)]
    )
    bench = assignment_create(pool=pool, name="bench-browser", assessors=users, with_ptkb=False)
    t = {
        "passage": Passage._meta.db_table,
        "run": Run._meta.db_table,
        "ranking": Ranking._meta.db_table,
        "entry": PoolEntry._meta.db_table,
        "judge": Judge._meta.db_table,
        "judgment": RelevanceJudgment._meta.db_table,
        "slot": WorkSlot._meta.db_table,
        "unit": WorkUnit._meta.db_table,
    }
    params = {
        "collection": pool.collection_id,
        "pool": pool.pk,
        "earlier": earlier.pk,
        "others": [u.pk for u in others],
        "n_others": len(others),
        "extra_passages": max(0, 30000 * scale - n_turns * per_turn),
        "done": int(n_turns * 0.6),
        "held": int(n_turns * 0.62),
    }
    statements = [
        # The passages no run ranked: 30,000 a scale in all, as real size holds.
        f"""INSERT INTO {t["passage"]} (collection_id, passage_id, title, text)
        SELECT %(collection)s, 'x' || i, '', repeat('Unranked text of no interest. ', 12)
        FROM generate_series(1, %(extra_passages)s) i""",
        # The other runs: each ranks every turn's pooled passages in its own order, 20 deep.
        f"""INSERT INTO {t["ranking"]} (run_id, turn_id, passage_ids, scores)
        SELECT r.id, tt.turn_id, tt.ids, (SELECT jsonb_agg(20 - k) FROM generate_series(0, 19) k)
        FROM {t["run"]} r
        CROSS JOIN LATERAL (
            SELECT e.turn_id, (jsonb_agg(e.passage_id ORDER BY md5(e.passage_id || r.id)) -> 0) AS ids
            FROM {t["entry"]} e WHERE e.pool_id = %(pool)s GROUP BY e.turn_id
        ) tt
        WHERE r.collection_id = %(collection)s AND r.name LIKE 'run%%'""",
        # Five machine judges graded every pooled pair.
        f"""INSERT INTO {t["judgment"]}
            (judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at, grade_key)
        SELECT j.id, e.turn_id, e.passage_id, abs(hashtext(e.passage_id || j.id)) %% 5, NULL, now(), now(), NULL
        FROM {t["entry"]} e CROSS JOIN {t["judge"]} j
        WHERE e.pool_id = %(pool)s AND j.kind = 'llm'""",
        # The other assessors did the first 60% of the earlier assignment's units in both copies and hold
        # the next 2%.
        f"""UPDATE {t["slot"]} s
        SET assessor_id = (%(others)s::bigint[])[1 + (s.position * 2 + s.copy) %% %(n_others)s],
            started_at = now() - interval '2 hours',
            leased_until = now() + interval '1 hour',
            completed_at = CASE WHEN s.position < %(done)s THEN now() - interval '1 hour' END
        WHERE s.assignment_id = %(earlier)s AND s.position < %(held)s""",
        f"""INSERT INTO {t["judgment"]}
            (judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at, grade_key)
        SELECT j.id, e.turn_id, e.passage_id, abs(hashtext(e.passage_id || j.id)) %% 5, 20000, now(), now(),
               gen_random_uuid()
        FROM {t["slot"]} s
        JOIN {t["unit"]} u ON u.id = s.unit_id
        JOIN {t["judge"]} j ON j.user_id = s.assessor_id
        JOIN {t["entry"]} e ON e.pool_id = %(pool)s AND e.turn_id = (u.turn_pks ->> 0)::bigint
        WHERE s.assignment_id = %(earlier)s AND s.completed_at IS NOT NULL""",
    ]
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement, params)
    connection.close()
    # What autovacuum leaves on a table in use: statistics and a visibility map.
    with psycopg_connect(connection.settings_dict["NAME"]) as conn:
        conn.execute("VACUUM ANALYZE")
        counts = conn.execute(
            f"""SELECT (SELECT count(*) FROM {t["judgment"]}), (SELECT count(*) FROM {t["passage"]}),
                       (SELECT count(*) FROM {t["entry"]}),
                       (SELECT count(*) FROM {t["slot"]} WHERE assessor_id IS NOT NULL)"""
        ).fetchone()
    judgments, passages, pairs, slots = counts or (0, 0, 0, 0)
    summary = (
        f"{n_turns} turns, {passages} passages, {9 * scale} runs, a pool of {pairs} pairs, "
        f"{judgments} judgments by {len(others)} other assessors and 5 machine judges, "
        f"{slots} copies held or done by the others"
    )
    return [u.pk for u in users], bench.pk, summary


def _p(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100)[q - 1]


def _stored_once(phase: Phase, judgments: Any) -> tuple[bool, str]:
    """Every 2xx submit stored once: rows == 2xx submits == distinct pairs == distinct granted."""
    submitted = sum(r.submitted_2xx for r in phase.results)
    granted = {g for r in phase.results for g in r.granted}
    rows = judgments.count()
    pairs = judgments.values("turn_id", "passage_id").distinct().count()
    ok = submitted == rows == pairs == len(granted)
    return ok, f"{submitted} 2xx submits, {rows} stored, {pairs} distinct pairs"


def _scale_main(args: argparse.Namespace) -> int:
    """The page path at scale 1 and at `args.scale`, each on its own database and server, slice by slice
    beside the trivial view on the same server; the ratio between the two scales is the figure."""
    import redis

    scales = (1, args.scale)
    names = [f"bench_assessors_{os.getpid()}_x{scale}" for scale in scales]
    urls = [_database_create(name) for name in names]
    ports = [PORT, PORT + 1]
    secret_key = secrets.token_urlsafe(50)
    cache_url, redis_title = _cache()
    # A Redis database per server: user pks repeat between the two databases, and throttles count by user.
    caches = [cache_url, cache_url.rsplit("/", 1)[0] + "/9" if cache_url else ""]
    os.environ.update(DATABASE_URL=urls[0], SECRET_KEY=secret_key, DB_POOL="0", CACHE_URL=cache_url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import RelevanceJudgment

    for url in caches:
        if url:
            redis.Redis.from_url(url).flushdb()
    servers: list[subprocess.Popen] = []
    try:
        seeded = []
        for scale, name in zip(scales, names, strict=True):
            _use(name)
            started = time.monotonic()
            call_command("migrate", verbosity=0)
            users, assignment, summary = _scale_seed(
                scale, args.assessors, args.scale_turns, args.scale_per_turn
            )
            print(f"scale {scale}: {summary}; built in {time.monotonic() - started:.0f} s")
            seeded.append((users, assignment))
        for url, port, cache in zip(urls, ports, caches, strict=True):
            servers.append(_serve(url, secret_key, args, args.threads, port=port, cache_url=cache))
        cookies = []
        for name, port, (users, _assignment) in zip(names, ports, seeded, strict=True):
            _use(name)
            _aim(port)
            # Threads of their own: a thread's connection keeps the database it was opened on.
            with ThreadPoolExecutor(8) as pool:
                cookies.append(list(pool.map(_browser_session, users)))
        connection.close()
        print(
            f"server: gunicorn gthread, {args.workers} workers x {args.threads} threads, one per scale on "
            f"its own database (the other idle while one is measured); {args.assessors} closed loops in "
            f"{args.client_processes} processes, no think time; each warmed up for {args.warmup_seconds:g} s, "
            "unmeasured, then VACUUM ANALYZE"
        )
        procs = args.client_processes
        trivial_credentials = [f"trivial{i}" for i in range(args.assessors)]

        def cpu_of(i: int) -> Any:
            return lambda: _server_cpu(servers[i].pid, names[i], redis_title)

        warm: list[Phase] = []
        # Each browser goes on from where its last run left it (the unit on its screen), as a person
        # does: one unit page per unit, not one per slice.
        carried: list[list[dict[str, Any]] | None] = [None for _ in scales]
        if args.warmup_seconds > 0:
            for i in range(len(scales)):
                _aim(ports[i])
                _load("trivial", trivial_credentials, 0, args.warmup_seconds, procs, cpu_of(i))
                warm.append(_load("browser", cookies[i], seeded[i][1], args.warmup_seconds, procs, cpu_of(i)))
                carried[i] = warm[-1].carried
            for name in names:
                with psycopg_connect(name) as conn:
                    conn.execute("VACUUM ANALYZE")
        slices = max(1, args.slices)
        trivial_runs: list[list[Phase]] = [[] for _ in scales]
        page_runs: list[list[Phase]] = [[] for _ in scales]
        for n in range(slices):
            # The order turns each slice, so that neither scale always runs first.
            for i in range(len(scales)) if n % 2 == 0 else reversed(range(len(scales))):
                _aim(ports[i])
                trivial_runs[i].append(
                    _load("trivial", trivial_credentials, 0, args.trivial_seconds / slices, procs, cpu_of(i))
                )
                page_runs[i].append(
                    _load(
                        "browser",
                        cookies[i],
                        seeded[i][1],
                        args.seconds / slices,
                        procs,
                        cpu_of(i),
                        carried=carried[i],
                    )
                )
                carried[i] = page_runs[i][-1].carried
        ratios = []
        ok = True
        for i, scale in enumerate(scales):
            trivial, page = _merged(trivial_runs[i]), _merged(page_runs[i])
            ratio = page.per_s / trivial.per_s if trivial.per_s else 0.0
            ratios.append(ratio)
            _use(names[i])
            stored, counts = _stored_once(
                Phase(page.results + (warm[i].results if warm else []), 0.0, 0.0, 0.0, 0.0),
                RelevanceJudgment.objects.filter(judge__user__username__startswith="browser"),
            )
            loads = [x for r in page.results for x in r.unit_loads]
            queues = [x for r in page.results for x in r.queue_loads]
            lat = page.latencies
            errors = page.errors + trivial.errors + (warm[i].errors if warm else [])
            ok = ok and stored and not errors
            print(
                f"scale {scale}: page path {page.per_s:.1f} judgments/s beside the trivial view's "
                f"{trivial.per_s:.1f} loops/s: {ratio:.3f} x trivial; grade p50 {_p(lat, 50) * 1000:.1f} ms, "
                f"p95 {_p(lat, 95) * 1000:.1f} ms; server CPU {page.cpu_ms:.2f} ms per judgment "
                f"({page.web_cpu / max(len(lat), 1) * 1000:.2f} gunicorn + "
                f"{page.db_cpu / max(len(lat), 1) * 1000:.2f} PostgreSQL)"
            )
            print(
                f"  unit pages {len(loads)}: p50 {_p(loads, 50) * 1000:.1f} ms, p95 {_p(loads, 95) * 1000:.1f} ms;"
                f" queue page p50 {_p(queues, 50) * 1000:.1f} ms, p95 {_p(queues, 95) * 1000:.1f} ms; "
                f"stored: {counts}; errors {len(errors)}" + (f" (first: {errors[0]})" if errors else "")
            )
        between = ratios[1] / ratios[0] if ratios[0] else 0.0
        met = between >= 0.9
        print(
            f"goal, scale {args.scale} against scale 1: {between:.2f} of the judgments/s (as ratios to the "
            f"trivial view beside each) (>= 0.9): {'MET' if met else 'NOT MET'}"
        )
        print(
            "every 2xx submit stored exactly once"
            if ok
            else "MISMATCH: judgments lost or duplicated, or errors"
        )
        return 0 if ok else 1
    finally:
        for server in servers:
            _stop(server)
        connection.close()
        for name in names:
            _database_drop(name)
        for url in caches:
            if url:
                redis.Redis.from_url(url).flushdb()


def psycopg_connect(name: str) -> Any:
    """An autocommit connection to the database `name` (VACUUM runs outside a transaction)."""
    import psycopg

    return psycopg.connect(_database_url(name), autocommit=True)


def main() -> int:
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=int(os.environ.get("BENCH_ASSESSORS", "50")))
    parser.add_argument(
        "--seconds",
        type=float,
        default=float(os.environ.get("BENCH_SECONDS", "30")),
        help="Length of the browser run and of the API run (env BENCH_SECONDS).",
    )
    parser.add_argument(
        "--trivial-seconds",
        type=float,
        default=float(os.environ.get("BENCH_TRIVIAL_SECONDS", "20")),
        help="Length of the trivial view's run beside each path, cut into as many slices (env BENCH_TRIVIAL_SECONDS).",
    )
    # 1000 turns x 40 = 40,000 pooled pairs per assignment: more than 50 assessors grade in the runs.
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--per-turn", type=int, default=40)
    # The server's shape defaults to the production one (deploy/gunicorn.conf.py, as `make serve` runs it).
    served = runpy.run_path(str(REPO / "deploy" / "gunicorn.conf.py"))
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("BENCH_WORKERS", served["workers"])),
        help="gunicorn gthread workers (deploy/gunicorn.conf.py's by default; env BENCH_WORKERS).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("BENCH_THREADS", served["threads"])),
        help="Threads per worker, and Django pool connections per worker (the same; env BENCH_THREADS).",
    )
    parser.add_argument(
        "--keep-alive",
        type=int,
        default=int(os.environ.get("BENCH_KEEP_ALIVE", served["keepalive"])),
        help="gthread keep-alive seconds (the same; env BENCH_KEEP_ALIVE).",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=int(os.environ.get("BENCH_CLIENT_PROCESSES", "2")),
        help="Processes the simulated clients are spread over (threads within each).",
    )
    parser.add_argument(
        "--think-s",
        type=float,
        default=float(os.environ.get("BENCH_THINK_S", "2")),
        help="Mean think time of the paced runs, where p95 is measured (env BENCH_THINK_S).",
    )
    parser.add_argument(
        "--paced-seconds",
        type=float,
        default=float(os.environ.get("BENCH_PACED_SECONDS", "15")),
        help="Length of each path's paced run (env BENCH_PACED_SECONDS).",
    )
    parser.add_argument(
        "--slices",
        type=int,
        default=int(os.environ.get("BENCH_SLICES", "2")),
        help="Slices each path's run is cut into, each after a slice of the trivial view (env BENCH_SLICES).",
    )
    parser.add_argument(
        "--compare-remembered",
        type=int,
        choices=(0, 1),
        default=int(os.environ.get("BENCH_COMPARE_REMEMBERED", "1")),
        help="Also run each path on the endpoints without remembered users, for the gain they bring (1).",
    )
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=float(os.environ.get("BENCH_WARMUP_SECONDS", "3")),
        help="Unmeasured run of each path before the measured ones, then ANALYZE (0: none).",
    )
    parser.add_argument(
        "--scale",
        type=int,
        default=int(os.environ.get("BENCH_SCALE", "0")),
        help="Measure only the page path, on a collection at the base size and at this many times it (env BENCH_SCALE).",
    )
    parser.add_argument("--scale-turns", type=int, default=220, help="Turns of the base size (--scale).")
    parser.add_argument("--scale-per-turn", type=int, default=50, help="Pooled passages per turn (--scale).")
    args = parser.parse_args()
    if args.scale > 1 and args.scale_turns < 2 * args.assessors:
        # A unit is a turn: with fewer than two each, assessors run out of work and idle within a run.
        parser.error("--scale-turns must be at least twice --assessors")
    if args.scale > 1:
        return _scale_main(args)

    db_name = f"bench_assessors_{os.getpid()}"
    database_url = _database_create(db_name)
    secret_key = secrets.token_urlsafe(50)
    cache_url, redis_title = _cache()
    os.environ.update(DATABASE_URL=database_url, SECRET_KEY=secret_key, DB_POOL="0", CACHE_URL=cache_url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.conf import settings
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection

    server = None
    try:
        cache.clear()
        call_command("migrate", verbosity=0)
        seeded = _seed(args.assessors, args.turns, args.per_turn, plain=bool(args.compare_remembered))
        # Planner statistics, as autovacuum keeps them on a database in use; a freshly loaded one has none.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        server = _serve(database_url, secret_key, args, args.threads)
        print(
            f"server: gunicorn gthread, {args.workers} workers x {args.threads} threads "
            f"({args.threads} connections each, keep-alive {args.keep_alive} s), Django's PostgreSQL pool "
            f"(max {args.threads} per worker) over {'a Unix socket' if '%2F' in PG_URL else 'loopback TCP'}; "
            f"sessions {'cached in Redis' if cache_url else 'in the database'} ({settings.SESSION_ENGINE}); "
            f"{cores} cores shared with the clients: {args.assessors} closed loops per kind in "
            f"{args.client_processes} processes, no think time; each path warmed up for "
            f"{args.warmup_seconds:g} s, unmeasured, then ANALYZE"
        )
        with ThreadPoolExecutor(8) as pool:
            cookies = list(pool.map(_browser_session, seeded.browser_users))
            if "plainbrowser" in seeded.plain:
                users, work = seeded.plain["plainbrowser"]
                seeded.plain["plainbrowser"] = (list(pool.map(_browser_session, users)), work)
        connection.close()
        kinds = [
            ("browser", cookies, seeded.browser_assignment),
            ("pair", seeded.pair_tokens, seeded.pair_assignment),
            ("api", seeded.tokens, seeded.api_assignment),
        ] + [(kind, creds, pk) for kind, (creds, pk) in seeded.plain.items()]

        def cpu_of() -> dict[tuple[str, int], float]:
            assert server is not None
            return _server_cpu(server.pid, db_name, redis_title)

        procs = args.client_processes
        # Steady state, as 50 assessors meet it an hour into a campaign: each path first runs unmeasured
        # (templates, URL and prepared-statement caches of every server thread), then the planner's
        # statistics are brought up to date, as autovacuum does within a minute or so of the first grades.
        # Without it the first path measured pays for the server's warm-up and runs on plans made for an
        # empty judgments table.
        warm: dict[str, Phase] = {}
        if args.warmup_seconds > 0:
            for kind, creds, pk in [("trivial", seeded.tokens, 0), *kinds]:
                warm[kind] = _load(kind, creds, pk, args.warmup_seconds, procs, cpu_of)
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
            connection.close()
        # Each path's measured run is cut into slices, each after a slice of the trivial view: the machine is
        # shared, its speed drifts within a run, and a path is compared with the baseline measured beside it.
        slices = max(1, args.slices)
        measured: dict[str, Phase] = {}
        baseline: dict[str, Phase] = {}
        for kind, creds, pk in kinds:
            trivial_runs, path_runs = [], []
            for _ in range(slices):
                trivial_runs.append(
                    _load("trivial", seeded.tokens, 0, args.trivial_seconds / slices, procs, cpu_of)
                )
                path_runs.append(_load(kind, creds, pk, args.seconds / slices, procs, cpu_of))
            baseline[kind], measured[kind] = _merged(trivial_runs), _merged(path_runs)
        browser, pair, api = measured["browser"], measured["pair"], measured["api"]
        # The same assessors at a person's pace, faster than any on record: where latency is what they feel.
        paced = {
            kind: _load(kind, creds, pk, args.paced_seconds, procs, cpu_of, think_s=args.think_s)
            for kind, creds, pk in (
                ("browser", cookies, seeded.browser_assignment),
                ("pair", seeded.pair_tokens, seeded.pair_assignment),
                ("api", seeded.tokens, seeded.api_assignment),
            )
        }
        trivial = _merged([baseline[kind] for kind in ("browser", "pair", "api")])

        from annotation.models import RelevanceJudgment

        paths = {
            "page (browser: grade with next, a page per unit)": (browser, "browser"),
            "API next + grade": (pair, "pair"),
            "API grade with next (next per unit)": (api, "api"),
        }
        plain_paths = {
            f"{name}, users not remembered": (measured[f"plain{prefix}"], f"plain{prefix}")
            for name, (_phase, prefix) in paths.items()
            if f"plain{prefix}" in measured
        }
        stored = {
            name: _stored_once(
                Phase(
                    phase.results
                    + (paced[prefix].results if prefix in paced else [])
                    + (warm[prefix].results if prefix in warm else []),
                    0.0,
                    0.0,
                    0.0,
                    0.0,
                ),
                RelevanceJudgment.objects.filter(judge__user__username__startswith=prefix),
            )
            for name, (phase, prefix) in (paths | plain_paths).items()
        }

        def line(name: str, phase: Phase, unit: str) -> str:
            lat = phase.latencies
            n = max(len(lat), 1)
            return (
                f"{name}: {phase.per_s:.1f} {unit}/s, p50 {_p(lat, 50) * 1000:.1f} ms, "
                f"p95 {_p(lat, 95) * 1000:.1f} ms, server CPU {phase.cpu_ms:.2f} ms per {unit[:-1]} "
                f"({phase.web_cpu / n * 1000:.2f} gunicorn + {phase.db_cpu / n * 1000:.2f} PostgreSQL + "
                f"{phase.cache_cpu / n * 1000:.2f} Redis; {len(lat)} in {phase.elapsed:.1f} s)"
            )

        def unit_line(phase: Phase) -> str:
            loads = [x for r in phase.results for x in r.unit_loads]
            queues = [x for r in phase.results for x in r.queue_loads]
            return (
                f"  unit page loads (next-unit form, its redirect, the page): {len(loads)}, "
                f"p50 {_p(loads, 50) * 1000:.1f} ms, p95 {_p(loads, 95) * 1000:.1f} ms; "
                f"queue page after a unit: p50 {_p(queues, 50) * 1000:.1f} ms, p95 {_p(queues, 95) * 1000:.1f} ms"
            )

        print(line("trivial view (2 JSON POSTs per loop)", trivial, "loops"))
        print(
            "  (beside the page, the API pair and the API with next: "
            + ", ".join(f"{baseline[k].per_s:.0f}" for k in ("browser", "pair", "api"))
            + " loops/s)"
        )
        for name, (phase, prefix) in paths.items():
            print(line(name, phase, "judgments"))
            if phase is browser:
                print(unit_line(phase))
            lat = paced[prefix].latencies
            print(
                f"  paced ({args.assessors} assessors, think {args.think_s:g} s): {paced[prefix].per_s:.1f} "
                f"judgments/s, p50 {_p(lat, 50) * 1000:.1f} ms, p95 {_p(lat, 95) * 1000:.1f} ms"
            )
            print(f"  stored: {stored[name][1]}")
        # What remembering users between requests (core.remembered) brings each path: both runs beside the
        # trivial view, slice by slice, in this one invocation.
        for name, (phase, prefix) in paths.items():
            if f"plain{prefix}" not in measured:
                continue
            plain = measured[f"plain{prefix}"]
            with_ratio = phase.per_s / baseline[prefix].per_s if baseline[prefix].per_s else 0.0
            without = (
                plain.per_s / baseline[f"plain{prefix}"].per_s if baseline[f"plain{prefix}"].per_s else 0.0
            )
            print(line(f"{name}, users not remembered", plain, "judgments"))
            print(f"  stored: {stored[f'{name}, users not remembered'][1]}")
            gain = with_ratio / without - 1 if without else 0.0
            print(
                f"remembered users, {name}: {with_ratio:.3f} x trivial with, {without:.3f} x without: "
                f"{gain:+.1%} judgments/s (kept where >= +10%)"
            )
        errors = [e for phase in measured.values() for e in phase.errors] + trivial.errors
        errors += [e for phase in [*paced.values(), *warm.values()] for e in phase.errors]
        print(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))

        met = True
        for name, (phase, prefix) in paths.items():
            beside = baseline[prefix]
            ratio = phase.per_s / beside.per_s if beside.per_s else 0.0
            p95 = _p(paced[prefix].latencies, 95) * 1000
            ok = ratio >= 0.35 and p95 < 200 and stored[name][0]
            met = met and ok
            print(
                f"goal, {name}: {ratio:.2f} x trivial (>= 0.35, no think time), p95 {p95:.0f} ms (< 200, "
                f"paced), stored once {'yes' if stored[name][0] else 'NO'}: {'MET' if ok else 'NOT MET'}"
            )
        ok = all(found for found, _counts in stored.values()) and not errors
        print(
            "every 2xx submit stored exactly once"
            if ok
            else "MISMATCH: judgments lost or duplicated, or errors"
        )
        print("goals " + ("MET" if met else "NOT MET"))
        return 0 if ok else 1
    finally:
        if server is not None:
            _stop(server)
        connection.close()
        _database_drop(db_name)
        if cache_url:
            cache.clear()


def _stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


def _cache() -> tuple[str, str]:
    """The CACHE_URL the server gets ("" for none) and the Redis server's process title."""
    url = os.environ.get("BENCH_CACHE_URL", "")
    if url == "none":
        return "", ""
    port = int(os.environ.get("REDIS_PORT", "56379"))
    if not url:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return "", ""
        # A database of its own, emptied before and after.
        url = f"redis://127.0.0.1:{port}/7"
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    return url, f"redis-server {host_port}"


if __name__ == "__main__":
    raise SystemExit(main())
