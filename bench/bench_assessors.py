"""Figure: 50 simulated assessors against gunicorn + PostgreSQL, versus a trivial Django view.

Each simulated assessor loops "ask for the next passage" + "submit a grade" through the JSON endpoints
(token auth, HTTP on loopback) for a bounded time. The script checks that no judgment was
lost or duplicated (judgments in the database == 2xx submits, one judge per pooled pair at redundancy
1), and prints p50/p95 loop latency and loops per second beside the requests per second of a trivial
Django view served by the same gunicorn in the same run (goal: p95 < 100 ms, throughput >= half).

It creates its own database on the PostgreSQL server (BENCH_PG_URL; by default the cluster `make services`
starts, through its Unix socket when that is there, as a PostgreSQL on the same machine should be reached:
it spares the TCP stack on every query) and drops it at the end.

    .venv/bin/python bench/bench_assessors.py [--assessors 50] [--seconds 60] [--trivial-seconds 20]

Imported by gunicorn (as `bench_assessors:application`) it serves the project plus /bench/trivial/.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
_PG_PORT = os.environ.get("PG_PORT", "55432")
_PG_SOCKET_DIR = REPO / ".tmp" / "pgdata"
PG_URL = os.environ.get("BENCH_PG_URL") or (
    f"postgres://assay@{quote(str(_PG_SOCKET_DIR), safe='')}:{_PG_PORT}/assay"
    if (_PG_SOCKET_DIR / f".s.PGSQL.{_PG_PORT}").exists()
    else f"postgres://assay@127.0.0.1:{_PG_PORT}/assay"
)
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
    from django.views.decorators.csrf import csrf_exempt

    @csrf_exempt
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

    from annotation.models import Collection, Passage, Ranking, Run, Topic, Turn
    from annotation.relevance.pooling import pool_build
    from annotation.relevance.work import assignment_create

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


def _serve(
    database_url: str, worker_class: str, workers: int, threads: int, keep_alive: int, connections: int
) -> subprocess.Popen:
    env = dict(
        os.environ,
        BENCH_ASSESSORS_SERVE="1",
        DATABASE_URL=database_url,
        # Persistent connections: a worker keeps its PostgreSQL connection instead of opening one per request.
        DB_CONN_MAX_AGE="600",
        DEBUG="0",
        LOG_LEVEL="ERROR",
    )
    command = [
        str(REPO / ".venv" / "bin" / "gunicorn"),
        "bench_assessors:application",
        "--chdir",
        str(REPO / "bench"),
        "--bind",
        f"{HOST}:{PORT}",
        "--worker-class",
        worker_class,
        "--workers",
        str(workers),
        "--backlog",
        "2048",
        "--log-level",
        "warning",
    ]
    if worker_class == "gthread":
        command += ["--threads", str(threads), "--keep-alive", str(keep_alive)]
        command += ["--worker-connections", str(connections)]
    process = subprocess.Popen(command, env=env, start_new_session=True)
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


@dataclass
class ClientResult:
    """What one simulated client saw: loop latencies (s), 2xx submits, graded pairs, errors."""

    latencies: list[float] = field(default_factory=list)
    submitted_2xx: int = 0
    granted: list[tuple[int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ended_at: float = 0.0


def _post(conn: http.client.HTTPConnection, url: str, body: dict, headers: dict) -> tuple[int, bytes]:
    conn.request("POST", url, body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def _assessor_loop(
    conn: http.client.HTTPConnection, headers: dict, assignment_pk: int, out: ClientResult
) -> bool:
    """One loop: ask for the next passage, grade it. False when no work is left or the server refused."""
    status, body = _post(conn, f"/relevance/api/{assignment_pk}/next/", {}, headers)
    if status == 204:
        return False
    if status != 200:
        out.errors.append(f"next {status} {body[:200]!r}")
        return False
    step = json.loads(body)
    grade = {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2, "time_spent_ms": 1}
    status, body = _post(conn, f"/relevance/api/work/{step['slot']}/grade/", grade, headers)
    json.loads(body)
    if 200 <= status < 300:
        out.submitted_2xx += 1
        out.granted.append((step["turn_pk"], step["passage_id"]))
    else:
        out.errors.append(f"grade {status} {body[:200]!r}")
    return True


def _trivial_loop(
    conn: http.client.HTTPConnection, headers: dict, assignment_pk: int, out: ClientResult
) -> bool:
    """The same shape as an assessor loop (two JSON POSTs with the token, both answers parsed), trivial view."""
    for _ in range(2):
        status, body = _post(conn, "/bench/trivial/", {}, headers)
        json.loads(body)
        if status != 200:
            out.errors.append(f"trivial {status} {body[:200]!r}")
            return False
    return True


def _client_process(
    kind: str, tokens: list[str], assignment_pk: int, start_at: float, stop_at: float, queue: Any
) -> None:
    """A client process: one thread per simulated client, each looping until `stop_at` (wall clock)."""
    loop = _assessor_loop if kind == "assessors" else _trivial_loop
    results = [ClientResult() for _ in tokens]

    def run(token: str, out: ClientResult) -> None:
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
        time.sleep(max(0.0, start_at - time.time()))
        while time.time() < stop_at:
            started = time.perf_counter()
            try:
                going = loop(conn, headers, assignment_pk, out)
            except (OSError, http.client.HTTPException) as exc:
                out.errors.append(f"{type(exc).__name__}: {exc}")
                conn.close()
                going = True
            else:
                if going:
                    out.latencies.append(time.perf_counter() - started)
            if not going:
                break
        out.ended_at = time.time()
        conn.close()

    threads = [
        threading.Thread(target=run, args=(t, r), daemon=True) for t, r in zip(tokens, results, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(results)


def _load(
    kind: str, tokens: list[str], assignment_pk: int, seconds: float, processes: int
) -> tuple[list[ClientResult], float]:
    """Run len(tokens) closed-loop clients spread over `processes` client processes; results and wall time.

    The same harness for the assessors and for the trivial view, so the ratio compares servers, not
    clients; clients live in their own processes so that one Python process's GIL is not what is measured.
    """
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    start_at = time.time() + 1.0
    stop_at = start_at + seconds
    shares = [tokens[i::processes] for i in range(processes)]
    workers = [
        context.Process(target=_client_process, args=(kind, share, assignment_pk, start_at, stop_at, queue))
        for share in shares
        if share
    ]
    for w in workers:
        w.start()
    results = [r for _ in workers for r in queue.get()]
    for w in workers:
        w.join()
    return results, max(r.ended_at for r in results) - start_at


def _loops(results: list[ClientResult]) -> int:
    return sum(len(r.latencies) for r in results)


def _p(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else (values[0] if values else 0.0)
    )


def main() -> int:
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0, help="Bound on the assessors' run.")
    parser.add_argument("--trivial-seconds", type=float, default=20.0)
    # 2000 turns x 40 = 80,000 pooled pairs: enough that 50 assessors at ~900 loops/s work for the whole
    # 60 s bound, and an assignment large enough to show a cost that grows with its size.
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--per-turn", type=int, default=40)
    parser.add_argument("--worker-class", default=os.environ.get("BENCH_WORKER_CLASS", "gthread"))
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("BENCH_WORKERS", cores)),
        help="One per core: PostgreSQL and the clients share the cores, and each extra process adds "
        "switching (2 cores, 8 threads each, measured here: 2 workers -> 760-915 loops/s, 3 -> 670, "
        "4 -> 580-710, 5 -> 540-585).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("BENCH_THREADS", "8")),
        help="Threads per gthread worker: an assessor request waits on PostgreSQL once, so more threads "
        "than the trivial view needs keep the cores busy (2 workers, measured here: 6 -> 660, 8 -> 735-915, "
        "12 -> 730 loops/s).",
    )
    parser.add_argument(
        "--worker-connections",
        type=int,
        default=int(os.environ.get("BENCH_WORKER_CONNECTIONS", "0")),
        help="Connections a gthread worker takes at once (default: its threads). A worker whose threads are "
        "all busy then leaves new connections to another instead of queueing them (gunicorn's default, "
        "1000, let one worker hoard them: paired 25 s runs here, p95 90-121 ms -> 70-76 ms).",
    )
    parser.add_argument(
        "--keep-alive",
        type=int,
        default=int(os.environ.get("BENCH_KEEP_ALIVE", "0")),
        help="gthread keep-alive seconds; 0 closes after each response so any idle worker takes the next.",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=int(os.environ.get("BENCH_CLIENT_PROCESSES", "2")),
        help="Processes the simulated clients are spread over (threads within each).",
    )
    args = parser.parse_args()

    db_name = f"bench_assessors_{os.getpid()}"
    database_url = _database_create(db_name)
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    server = None
    try:
        call_command("migrate", verbosity=0)
        assignment_pk, tokens = _seed(args.assessors, args.turns, args.per_turn)
        connection.close()
        connections = args.worker_connections or args.threads
        server = _serve(
            database_url, args.worker_class, args.workers, args.threads, args.keep_alive, connections
        )
        print(
            f"server: gunicorn {args.worker_class}, {args.workers} workers"
            + (
                f" x {args.threads} threads, {connections} connections each, keep-alive {args.keep_alive} s"
                if args.worker_class == "gthread"
                else ""
            )
            + f", persistent DB connections over {'a Unix socket' if '%2F' in PG_URL else 'TCP'}, "
            f"{settings.ASSAY_FAST_PATH_CONNECTIONS} per worker for the API's statements "
            "(ASSAY_FAST_PATH_CONNECTIONS); "
            f"{cores} cores; clients: {args.assessors} closed loops "
            f"in {args.client_processes} processes, no think time"
        )

        # The baseline, the trivial view through the same client harness on the same server, runs half
        # before and half after the assessors, so that a shared machine's load drifting during the run
        # weighs on both sides of the ratio.
        half = args.trivial_seconds / 2
        before, before_elapsed = _load("trivial", tokens, assignment_pk, half, args.client_processes)
        results, elapsed = _load("assessors", tokens, assignment_pk, args.seconds, args.client_processes)
        after, after_elapsed = _load("trivial", tokens, assignment_pk, half, args.client_processes)
        trivial, trivial_elapsed = before + after, before_elapsed + after_elapsed

        from annotation.models import RelevanceJudgment

        judgments = RelevanceJudgment.objects.filter(turn__collection__name="bench")
        in_db = judgments.count()
        distinct_pairs = judgments.values("turn_id", "passage_id").distinct().count()
        latencies = [x for r in results for x in r.latencies]
        submitted = sum(r.submitted_2xx for r in results)
        errors = [e for r in results for e in r.errors] + [e for r in trivial for e in r.errors]
        granted = [g for r in results for g in r.granted]
        loops_per_s = len(latencies) / elapsed
        trivial_latencies = [x for r in trivial for x in r.latencies]
        trivial_loops_per_s = len(trivial_latencies) / trivial_elapsed
        p50, p95 = _p(latencies, 50) * 1000, _p(latencies, 95) * 1000
        ratio = loops_per_s / trivial_loops_per_s if trivial_loops_per_s else 0.0

        print(f"assessors: {args.assessors}, bounded to {args.seconds:.0f} s, ran {elapsed:.1f} s")
        print(f"judgments: {submitted} 2xx submits, {in_db} in the database, {distinct_pairs} distinct pairs")
        print(f"errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
        print(f"loop latency (next + grade): p50 {p50:.1f} ms, p95 {p95:.1f} ms (goal: p95 < 100 ms)")
        print(f"throughput: {loops_per_s:.1f} loops/s = {2 * loops_per_s:.1f} requests/s")
        print(
            f"trivial view, same harness (2 JSON POSTs per loop): {trivial_loops_per_s:.1f} loops/s = "
            f"{2 * trivial_loops_per_s:.1f} requests/s, loop p50 {_p(trivial_latencies, 50) * 1000:.1f} ms, "
            f"p95 {_p(trivial_latencies, 95) * 1000:.1f} ms ({args.assessors} clients, {args.trivial_seconds:.0f} s: "
            f"{_loops(before) / before_elapsed:.0f} loops/s before the assessors, "
            f"{_loops(after) / after_elapsed:.0f} after)"
        )
        print(f"ratio: assessor requests/s / trivial requests/s = {ratio:.2f} (goal >= 0.5)")
        # Little's law for a closed loop without think time: mean latency = clients / throughput.
        print(
            f"bound: {args.assessors} closed loops at {loops_per_s:.0f} loops/s => mean loop "
            f"{args.assessors / loops_per_s * 1000:.0f} ms; a p95 under 100 ms needs more than "
            f"{args.assessors / 0.1:.0f} loops/s"
            if loops_per_s
            else "bound: no loops completed"
        )
        print(
            f"goals: p95 < 100 ms {'MET' if p95 < 100 else 'NOT MET'}; "
            f"throughput >= 0.5 x trivial {'MET' if ratio >= 0.5 else 'NOT MET'}"
        )
        ok = submitted == in_db == distinct_pairs == len(set(granted)) and not errors
        print("no judgment lost or duplicated" if ok else "MISMATCH: judgments lost or duplicated, or errors")
        return 0 if ok else 1
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        connection.close()
        _database_drop(db_name)


if __name__ == "__main__":
    raise SystemExit(main())
