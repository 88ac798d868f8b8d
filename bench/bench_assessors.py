"""Figure: 50 simulated assessors against gunicorn + PostgreSQL, versus a trivial Django view.

Each simulated assessor loops "ask for the next passage" + "submit a grade" through the JSON endpoints
(token auth, keep-alive HTTP on loopback) for a bounded time. The script checks that no judgment was
lost or duplicated (judgments in the database == 2xx submits, one judge per pooled pair at redundancy
1), and prints p50/p95 loop latency and loops per second beside the requests per second of a trivial
Django view served by the same gunicorn in the same run (goal: p95 < 100 ms, throughput >= half).

It creates its own database on the PostgreSQL server (BENCH_PG_URL, default
postgres://assay@127.0.0.1:55432/assay) and drops it at the end.

    .venv/bin/python bench/bench_assessors.py [--assessors 50] [--seconds 60] [--trivial-seconds 20]

Imported by gunicorn (as `bench_assessors:application`) it serves the project plus /bench/trivial/.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://assay@127.0.0.1:55432/assay")
HOST, PORT = "127.0.0.1", int(os.environ.get("BENCH_PORT", "58123"))

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

    def trivial(request: HttpRequest) -> HttpResponse:
        return HttpResponse(b'{"ok": true}', content_type="application/json")

    urlpatterns = [path("bench/trivial/", trivial), path("", include("assay.urls"))]
    settings.ROOT_URLCONF = __name__
    application = get_wsgi_application()


def _database_create(name: str) -> str:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return PG_URL.rsplit("/", 1)[0] + "/" + name


def _database_drop(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _seed(n_assessors: int, n_turns: int, per_turn: int) -> tuple[int, list[str]]:
    """A collection whose pool holds n_turns x per_turn pairs, assigned by turn to n_assessors."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.assignment import assignment_create
    from annotation.models import Collection, Passage, Ranking, Run, Topic, Turn
    from annotation.pooling import pool_build

    collection = Collection.objects.create(name="bench")
    run = Run.objects.create(collection=collection, name="bm25")
    topics = Topic.objects.bulk_create(
        [Topic(collection=collection, number=str(t)) for t in range(n_turns // 10)]
    )
    turns = Turn.objects.bulk_create(
        [
            Turn(
                collection=collection,
                topic=topics[i // 10],
                turn_id=f"{topics[i // 10].number}_{i % 10 + 1}",
                position=i % 10 + 1,
                utterance=f"question {i}",
            )
            for i in range(n_turns)
        ]
    )
    text = "A passage of moderate length about the topic at hand. " * 8
    passages = [
        Passage(collection=collection, passage_id=f"d{i}:{j}", text=text)
        for i in range(n_turns)
        for j in range(per_turn)
    ]
    Passage.objects.bulk_create(passages, batch_size=5000)
    Ranking.objects.bulk_create(
        [
            Ranking(
                run=run,
                turn=turn,
                passage_ids=[f"d{i}:{j}" for j in range(per_turn)],
                scores=[float(per_turn - j) for j in range(per_turn)],
            )
            for i, turn in enumerate(turns)
        ]
    )
    pool = pool_build(collection=collection, name="bench", depth=per_turn).pool
    users = [
        get_user_model().objects.create_user(username=f"assessor{i}", password="x")
        for i in range(n_assessors)
    ]
    assignment = assignment_create(pool=pool, name="bench", assessors=users, redundancy=1, with_ptkb=False)
    tokens = [Token.objects.create(user=user).key for user in users]
    return assignment.pk, tokens


def _serve(database_url: str) -> subprocess.Popen:
    env = dict(
        os.environ,
        BENCH_ASSESSORS_SERVE="1",
        DATABASE_URL=database_url,
        DB_CONN_MAX_AGE="600",
        DEBUG="0",
        LOG_LEVEL="ERROR",
    )
    workers = os.environ.get("BENCH_WORKERS", "4")
    threads = os.environ.get("BENCH_THREADS", "4")
    process = subprocess.Popen(
        [
            str(REPO / ".venv" / "bin" / "gunicorn"),
            "bench_assessors:application",
            "--chdir",
            str(REPO / "bench"),
            "--bind",
            f"{HOST}:{PORT}",
            "--worker-class",
            "gthread",
            "--workers",
            workers,
            "--threads",
            threads,
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
        ],
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(HOST, PORT, timeout=2)
            conn.request("GET", "/bench/trivial/")
            if conn.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("gunicorn did not come up")


class Assessor(threading.Thread):
    """Loops next + grade until the deadline or until no work is left; records loop latencies."""

    def __init__(self, token: str, assignment_pk: int, deadline: float) -> None:
        super().__init__(daemon=True)
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.assignment_pk, self.deadline = assignment_pk, deadline
        self.latencies: list[float] = []
        self.submitted_2xx = 0
        self.errors: list[str] = []
        self.granted: list[tuple[int, str]] = []

    def _post(self, conn: http.client.HTTPConnection, url: str, body: dict) -> tuple[int, bytes]:
        conn.request("POST", url, body=json.dumps(body), headers=self.headers)
        response = conn.getresponse()
        return response.status, response.read()

    def run(self) -> None:
        conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
        while time.monotonic() < self.deadline:
            start = time.perf_counter()
            status, body = self._post(conn, f"/relevance/api/{self.assignment_pk}/next/", {})
            if status == 204:
                return
            if status != 200:
                self.errors.append(f"next {status} {body[:200]!r}")
                return
            step = json.loads(body)
            status, body = self._post(
                conn,
                f"/relevance/api/work/{step['slot']}/grade/",
                {
                    "turn_pk": step["turn_pk"],
                    "passage_id": step["passage_id"],
                    "grade": 2,
                    "time_spent_ms": 1,
                },
            )
            if 200 <= status < 300:
                self.submitted_2xx += 1
                self.granted.append((step["turn_pk"], step["passage_id"]))
            else:
                self.errors.append(f"grade {status} {body[:200]!r}")
            self.latencies.append(time.perf_counter() - start)


def _trivial_load(clients: int, seconds: float) -> tuple[int, list[float]]:
    deadline = time.monotonic() + seconds
    counts: list[int] = [0] * clients
    latencies: list[list[float]] = [[] for _ in range(clients)]

    def hammer(i: int) -> None:
        conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
        while time.monotonic() < deadline:
            start = time.perf_counter()
            conn.request("GET", "/bench/trivial/")
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                counts[i] += 1
            latencies[i].append(time.perf_counter() - start)

    threads = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts), [x for per in latencies for x in per]


def _p(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else (values[0] if values else 0.0)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0, help="Bound on the assessors' run.")
    parser.add_argument("--trivial-seconds", type=float, default=20.0)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--per-turn", type=int, default=40)
    args = parser.parse_args()

    db_name = f"bench_assessors_{os.getpid()}"
    database_url = _database_create(db_name)
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    server = None
    try:
        call_command("migrate", verbosity=0)
        assignment_pk, tokens = _seed(args.assessors, args.turns, args.per_turn)
        connection.close()
        server = _serve(database_url)

        # Baseline first: the trivial view under the same number of clients, same server, same run.
        trivial_count, trivial_latencies = _trivial_load(args.assessors, args.trivial_seconds)
        trivial_rps = trivial_count / args.trivial_seconds

        started = time.monotonic()
        deadline = started + args.seconds
        assessors = [Assessor(token, assignment_pk, deadline) for token in tokens]
        for a in assessors:
            a.start()
        for a in assessors:
            a.join()
        elapsed = time.monotonic() - started

        from annotation.models import RelevanceJudgment

        latencies = [x for a in assessors for x in a.latencies]
        submitted = sum(a.submitted_2xx for a in assessors)
        errors = [e for a in assessors for e in a.errors]
        in_db = RelevanceJudgment.objects.filter(turn__collection__name="bench").count()
        distinct_pairs = (
            RelevanceJudgment.objects.filter(turn__collection__name="bench")
            .values("turn_id", "passage_id")
            .distinct()
            .count()
        )
        granted = [g for a in assessors for g in a.granted]
        loops_per_s = len(latencies) / elapsed
        p50, p95 = _p(latencies, 50) * 1000, _p(latencies, 95) * 1000

        print(f"assessors: {args.assessors}, bounded to {args.seconds:.0f} s, ran {elapsed:.1f} s")
        print(f"judgments: {submitted} 2xx submits, {in_db} in the database, {distinct_pairs} distinct pairs")
        print(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
        print(f"loop latency (next + grade): p50 {p50:.1f} ms, p95 {p95:.1f} ms (goal < 100 ms)")
        print(f"throughput: {loops_per_s:.1f} loops/s = {2 * loops_per_s:.1f} requests/s")
        print(
            f"trivial view: {trivial_rps:.1f} requests/s, p95 {_p(trivial_latencies, 95) * 1000:.1f} ms "
            f"({args.assessors} clients, {args.trivial_seconds:.0f} s)"
        )
        print(
            f"ratio: loops/s / trivial requests/s = {loops_per_s / trivial_rps:.2f}; "
            f"requests/s / trivial requests/s = {2 * loops_per_s / trivial_rps:.2f} (goal >= 0.5)"
        )
        ok = submitted == in_db == distinct_pairs == len(set(granted)) and not errors
        print("no judgment lost or duplicated" if ok else "MISMATCH: judgments lost or duplicated")
        return 0 if ok else 1
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        connection.close()
        _database_drop(db_name)


if __name__ == "__main__":
    raise SystemExit(main())
