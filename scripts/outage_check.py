"""Kill a task worker and a web worker, stop the cache's Redis, then PostgreSQL, under a load of assessors,
and count what the stack answered.

    .venv/bin/python scripts/outage_check.py          # 50 assessors; tasks, web, Redis, then PostgreSQL
    .venv/bin/python scripts/outage_check.py --faults redis --assessors 20 --down 6
    TMP=/tmp/mine PG_PORT=55700 REDIS_PORT=56700 .venv/bin/python scripts/outage_check.py  # own cluster

It runs the production stack (`scripts/serve.sh`, DEBUG off, plain HTTP) on a database of its own in the
PostgreSQL cluster `make services` starts (PG_PORT, REDIS_PORT as for make; the cluster's data folder is
$TMP/pgdata, TMP defaulting to .tmp), with its cache on a Redis server of its own (CACHE_URL), so stopping
that Redis stops the cache and nothing else. It seeds one relevance campaign and signed-in sessions, then runs
that many simulated assessors doing what the relevance page's JavaScript does (the unit's page, then one JSON
grade per passage answered with the next one, each with a fresh idempotency key; after a 503 the same grade
with the same key again after a pause), and beside them two API scripts with tokens, and an LLM relevance job
(against a loopback OpenAI-compatible fake) on the task workers. Its units are long enough (the fake answers
each call after half a second until the last fault is over, then at once) that every fault lands while the job
runs and the assessors grade, which the check prints and requires. Each fault stops its service for --down
seconds and starts it again, with --steady seconds of load before, between and after. The `tasks` fault waits
until the job has judged some units, kill -9s the task worker running it, and resumes the job as the Jobs
page's button does once the job reads as interrupted, which it must within seconds (the worker's lock is gone
with it; nothing waits for JOB_STALE_AFTER_S); the `web` fault kill -9s one gunicorn worker (not the master),
which the master replaces. Stopping PostgreSQL interrupts the job too (its worker exits when its connection
dies and is started again by its keeper): once the database is back it must read as interrupted at once, and
is resumed the same way, which a new worker takes.

It prints the answers per phase and per fault, and checks that no fault gave a 5xx other than 503 (a
database that is down answers 503 by design; a Redis that is down should give none), and that every grade
answered 2xx is stored exactly once with its time counted once (a grade stored just before an outage and
retried must not add its time again), and that the job ended done with each of its units judged once. It
exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

REPO = Path(__file__).resolve().parent.parent
TMP = Path(os.environ.get("TMP") or REPO / ".tmp").resolve()
PG_PORT = os.environ.get("PG_PORT", "55432")
REDIS_PORT = os.environ.get("REDIS_PORT", "56379")
DB = "assay_outage_check"
SECRET_KEY = "outage-check-" + "o" * 60
PAUSE_AFTER_503_S = 0.5
GRADE_MS = 1500  # every simulated grade's time: a stored grade holding more had its time counted twice
_CSRF_INPUT = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg(*args: str) -> None:
    from assay import embedded_db

    subprocess.run(
        [str(embedded_db.binaries() / args[0]), "-h", "127.0.0.1", "-p", PG_PORT, "-U", "assay", *args[1:]],
        check=False,
        capture_output=True,
    )


class Postgres:
    """The cluster of `make services` (scripts/services.sh: assay.embedded_db in $TMP/pgdata), stopped
    (fast: every session ended) and started again."""

    def __init__(self) -> None:
        from assay import embedded_db

        self.db, self.pgdata = embedded_db, TMP / "pgdata"

    def stop(self) -> None:
        if not self.db.stop(data=self.pgdata):
            raise SystemExit(f"PostgreSQL in {self.pgdata} did not stop")

    def start(self) -> None:
        self.db.start(data=self.pgdata, at_port=int(PG_PORT), database=DB)


class Redis:
    """A Redis server of this check's own, for the stack's cache; it comes back empty, as a cache should."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        options = f"--port {self.port} --bind 127.0.0.1 --appendonly no --dir {TMP}".split()
        self.process = subprocess.Popen(["redis-server", *options, "--save", ""], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True)
            self.process.wait(timeout=10)
            self.process = None


def _seed(n_assessors: int, per_turn: int) -> tuple[int, list[tuple[str, str]], list[str]]:
    """One pool with a unit per assessor and then some, an assignment for all of them, a signed-in session
    each (made here: logging 50 people in would only measure password hashing), and two API tokens."""
    # No pool in this process: its connection must be opened anew after the cluster restarts.
    os.environ.update(
        DATABASE_URL=f"postgres://assay@127.0.0.1:{PG_PORT}/{DB}",
        DEBUG="0",
        SECRET_KEY=SECRET_KEY,
        DB_POOL="0",
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from rest_framework.authtoken.models import Token

    from annotation.relevance.assignments import assignment_create
    from devtools.load_data import load_pool_build, signed_in_sessions

    pool = load_pool_build(
        name="outage-check",
        n_turns=n_assessors * 4,
        per_turn=per_turn,
        passage_text="A passage about the topic. " * 20,
    )
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"o{i}", password=make_password(None)) for i in range(n_assessors)]
    )
    assignment = assignment_create(pool=pool, name="outage-check", assessors=users, with_ptkb=False)
    sessions = list(zip([user.username for user in users], signed_in_sessions(users), strict=True))
    tokens = [Token.objects.create(user=user).key for user in users[:2]]
    return assignment.pk, sessions, tokens


JOB_TURNS = 4  # the judge job's turns, each judged to --per-turn depth: one unit per passage
LLM_LATENCY_S = 0.5  # each answer of the fake while the faults last: the job outlasts them


def _job_start(per_turn: int) -> int:
    """An LLM relevance job on the first turns, queued for the stack's task workers. Their passages get
    texts of their own first: with the seed's one text, a turn's units share one prompt, and the job
    would end from the LLM cache after a call per turn, before any fault."""
    from django.db.models import F, Value
    from django.db.models.functions import Concat

    from annotation.models import Collection, Passage, Turn
    from judging.machine.jobs import judge_job_start
    from judging.machine.tasks import judge_job_queue

    collection = Collection.objects.get(name="outage-check")
    turns = list(Turn.objects.filter(collection=collection).order_by("id")[:JOB_TURNS])
    for turn in turns:
        ranked = turn.rankings.values_list("passage_ids", flat=True).first() or []
        Passage.objects.filter(collection=collection, passage_id__in=ranked).update(
            text=Concat(F("text"), Value(" Passage "), F("passage_id"))
        )
    job = judge_job_start(
        collection=collection,
        task="relevance",
        judge_name="outage-llm",
        model="toy",
        options={"turns": sorted(turn.turn_id for turn in turns), "depth": per_turn},
        concurrency=1,
    )
    return judge_job_queue(job=job).pk


def _job_running(job_id: int, fault: str) -> tuple[int, int]:
    """The job's units done and total as a fault lands; it must be running, or the fault proves nothing
    about work in flight."""
    from django.db import connections

    from judging.models import JudgeJob

    connections.close_all()
    job = JudgeJob.objects.get(pk=job_id)
    if job.status != "running" or job.units_done >= job.units_total:
        raise SystemExit(
            f"the {fault} fault would land with the judge job {job.status} ({job.units_done} units)"
        )
    return job.units_done, job.units_total


def _job_resume_once_interrupted(job_id: int, since: float, within_s: float) -> float:
    """Wait until the job reads as interrupted, as the Jobs page reads it, then resume it as its button
    does; how long after `since` it read so. Too long fails the check: a dead worker's job must read as
    interrupted at once, not after JOB_STALE_AFTER_S."""
    from django.db import OperationalError, connections

    from judging.machine.jobs.state import INTERRUPTED, jobs_read
    from judging.machine.tasks import judge_job_resume
    from judging.models import JudgeJob

    while True:
        connections.close_all()  # a connection from before a restart of PostgreSQL is dead
        try:
            (read,) = jobs_read([JudgeJob.objects.get(pk=job_id)])
        except OperationalError:
            read = None
        if read is not None and read.state == INTERRUPTED:
            break
        if time.monotonic() - since > within_s:
            state = "unknown" if read is None else read.state
            raise SystemExit(f"the judge job still read {state} {within_s:g} s after its worker went")
        time.sleep(0.1)
    took = time.monotonic() - since
    judge_job_resume(job=read)
    return took


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, read from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _kill_web_worker(port: int) -> str:
    master = int((TMP / f"serve-{port}-web.pid").read_text())
    workers = _children(master)
    if not workers:
        raise SystemExit("no gunicorn worker to kill")
    os.kill(workers[0], signal.SIGKILL)
    return f"killed gunicorn worker {workers[0]} of master {master}"


def _kill_task_worker(port: int, job_id: int, deadline: float) -> str:
    """Once the job has judged some units, kill -9 the task worker running it; then resume the job, as an
    organiser does with the Jobs page's button once the job reads as interrupted."""
    from django.db import connections
    from django_tasks_db.models import DBTaskResult

    from judging.models import JudgeJob

    while True:
        connections.close_all()
        job = JudgeJob.objects.get(pk=job_id)
        if job.status == "running" and job.units_done > 0:
            break
        if job.status in ("done", "failed") or time.monotonic() > deadline:
            raise SystemExit(f"the judge job was {job.status} with {job.units_done} units before the kill")
        time.sleep(0.1)
    worker_id = DBTaskResult.objects.get(id=job.task_id).worker_ids[-1]
    # A worker names itself <host>-<random>-<pid>, and serve.sh's keepers write their workers' pids.
    workers = {int(path.read_text()) for path in TMP.glob(f"serve-{port}-tasks-*.pid")}
    pid = int(worker_id.rsplit("-", 1)[1])
    if pid not in workers:
        raise SystemExit(f"task worker {worker_id} is not among make serve's workers {sorted(workers)}")
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    took = _job_resume_once_interrupted(job_id, killed, within_s=5)
    return (
        f"killed task worker {pid} ({worker_id}) at {job.units_done}/{job.units_total} units; the job read "
        f"interrupted {took:.1f} s later and was resumed"
    )


def _job_report(job_id: int, timeout: float) -> bool:
    """Wait for the job to end; it must be done, with each of its units judged once."""
    from django.db import connections
    from django.db.models import Count

    from annotation.models import RelevanceJudgment
    from judging.models import JudgeJob

    deadline = time.monotonic() + timeout
    while True:
        connections.close_all()
        job = JudgeJob.objects.get(pk=job_id)
        if job.status in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    per_unit = RelevanceJudgment.objects.filter(judge=job.judge).values("turn_id", "passage_id")
    counts = list(per_unit.annotate(n=Count("id")).values_list("n", flat=True))
    twice = sum(1 for n in counts if n > 1)
    print(
        f"judge job: {job.status}, {job.units_done}/{job.units_total} units done, {job.units_failed} failed; "
        f"{len(counts)} units judged, {twice} judged more than once"
    )
    return job.status == "done" and len(counts) == job.units_total and twice == 0


class Log:
    """Every answer the clients got, with its time, and every grade answered 2xx."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answers: list[tuple[float, str, int | str]] = []
        self.acknowledged: list[tuple[str, int, str]] = []
        self.errors: list[str] = []
        # When the clients stop: set once the last fault's window is over (a fault may take a while).
        self.until = float("inf")

    def answer(self, kind: str, status: int | str) -> None:
        with self.lock:
            self.answers.append((time.monotonic(), kind, status))


class Browser:
    def __init__(self, port: int, session: str, log: Log) -> None:
        self.port, self.log = port, log
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookies = {"sessionid": session}

    def request(
        self, kind: str, method: str, url: str, body: bytes | None = None, headers: dict | None = None
    ):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **(headers or {})}
        for attempt in range(2):  # keep-alive off: a connection the server closed is opened again once
            try:
                self.conn.request(method, url, body=body, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError) as exc:
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    self.log.answer(kind, type(exc).__name__)
                    return 0, {}, b""
        self.log.answer(kind, response.status)
        for value in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, response.headers, data


def _attr(page: bytes, name: str) -> str:
    found = re.search(rb"data-" + name.encode() + rb'="([^"]*)"', page)
    if found is None:
        raise ValueError(f"no data-{name} on the page")
    return found.group(1).decode()


def _unit(b: Browser, assignment: int) -> dict[str, Any] | None:
    """Ask for a unit and open its page, as the queue's button does; None when there is no work left."""
    form = urlencode({"csrfmiddlewaretoken": b.cookies.get("csrftoken", "")}).encode()
    status, headers, page = b.request(
        "page",
        "POST",
        f"/relevance/{assignment}/next/",
        form,
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    while status in (301, 302, 303):
        target = urlsplit(headers["Location"]).path
        if target.rstrip("/").endswith("/relevance"):
            return None
        status, headers, page = b.request("page", "GET", target)
    if status != 200:
        return {"retry": True}
    return {
        "csrf": _CSRF_INPUT.search(page).group(1).decode(),  # type: ignore[union-attr]
        "grade_url": _attr(page, "grade-url"),
        "step": (int(_attr(page, "turn-pk")), _attr(page, "passage-id")),
    }


def _assessor(port: int, username: str, session: str, assignment: int, log: Log) -> None:
    b = Browser(port, session, log)
    while b.request("page", "GET", "/relevance/")[0] != 200 and time.monotonic() < log.until:
        time.sleep(PAUSE_AFTER_503_S)  # the queue page sets the CSRF cookie
    unit: dict[str, Any] | None = None
    # A grade already sent is sent again until it is answered, even past the end: a 503 may hide a grade
    # that was stored, and its retry must not store it twice.
    while time.monotonic() < log.until or (
        unit and unit.get("pending") and time.monotonic() < log.until + 60
    ):
        if unit is None or unit.get("retry"):
            unit = _unit(b, assignment)
            if unit is None:
                return  # no work left
            if unit.get("retry"):
                time.sleep(PAUSE_AFTER_503_S)
            continue
        turn_pk, passage_id = unit["step"]
        body = {
            "turn_pk": turn_pk,
            "passage_id": passage_id,
            "grade": 2,
            "time_spent_ms": GRADE_MS,
            "next": True,
        }
        if not unit.get("pending"):
            unit["key"] = str(uuid.uuid4())
        headers = {
            "Content-Type": "application/json",
            "X-CSRFToken": unit["csrf"],
            "Idempotency-Key": unit["key"],
        }
        unit["pending"] = True
        status, _h, data = b.request("grade", "POST", unit["grade_url"], json.dumps(body).encode(), headers)
        if status == 503 or status == 0:
            time.sleep(PAUSE_AFTER_503_S)
            continue
        unit["pending"] = False
        if status != 201:
            with log.lock:
                log.errors.append(f"grade {status} {data[:120]!r}")
            unit = None
            continue
        with log.lock:
            log.acknowledged.append((username, turn_pk, passage_id))
        nxt = json.loads(data).get("next")
        if nxt and nxt["turn_pk"] == turn_pk:
            unit["step"] = (nxt["turn_pk"], nxt["passage_id"])
        else:
            unit = None  # the unit is done: ask for the next, as the page does


def _script(port: int, token: str, log: Log) -> None:
    """An API client with a token: reads the collections, as fast as it is answered."""
    while time.monotonic() < log.until:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", "/api/collections/", headers={"Authorization": f"Token {token}"})
            response = conn.getresponse()
            response.read()
            log.answer("api", response.status)
        except (http.client.HTTPException, OSError) as exc:
            log.answer("api", type(exc).__name__)
        time.sleep(0.05)


def _wait_ready(port: int, server: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"serve.sh ended; see {log_path}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the stack did not become ready; see {log_path}")


def _count(log: Log, start: float, end: float) -> dict[str, dict[Any, int]]:
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for at, kind, status in log.answers:
        if start <= at < end:
            counts[kind][status] += 1
    return {kind: dict(sorted(c.items(), key=str)) for kind, c in sorted(counts.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=50)
    parser.add_argument(
        "--faults",
        default="tasks,web,redis,postgres",
        help="comma-separated, in order: tasks (kill -9 a task worker mid-job), web (kill -9 a gunicorn "
        "worker), redis, postgres",
    )
    parser.add_argument("--down", type=float, default=5, help="seconds each service stays stopped")
    parser.add_argument("--steady", type=float, default=5, help="seconds of load before, between and after")
    parser.add_argument(
        "--per-turn",
        type=int,
        default=100,
        help="passages per turn (one unit each): enough that grading spans every fault",
    )
    args = parser.parse_args()
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    if set(faults) - {"tasks", "web", "redis", "postgres"}:
        parser.error("--faults takes tasks, web, redis and postgres")

    subprocess.run(
        ["bash", "scripts/services.sh", "start", str(TMP), PG_PORT, REDIS_PORT], cwd=REPO, check=True
    )
    _pg("dropdb", "--if-exists", "--force", DB)
    _pg("createdb", DB)
    cache, postgres = Redis(), Postgres()
    cache.start()
    sys.path.insert(0, str(REPO))
    from devtools.openai_server import FakeOpenAI, toy_responder

    # Slow enough that the job still runs when its worker is killed, on a quiet machine too.
    llm = FakeOpenAI(responder=toy_responder, latency=LLM_LATENCY_S).start()
    port = _free_port()
    log_path = TMP / "outage-check.log"
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TEST_DATABASE_NAME", "DEBUG"}}
    env |= {
        "PG_PORT": PG_PORT,
        "REDIS_PORT": REDIS_PORT,
        "SERVE_DB": DB,
        "SERVE_REDIS_DB": "9",
        "SERVE_HTTP": "1",
        "TMP": str(TMP),
        "PORT": str(port),
        "SECRET_KEY": SECRET_KEY,
        "CACHE_URL": cache.url,
        "LOG_LEVEL": "WARNING",
        "OPENAI_BASE_URL": llm.url,
        "OPENAI_API_KEY": "outage-check",
    }
    log = Log()
    with open(log_path, "w") as server_log:
        server = subprocess.Popen(
            ["bash", "scripts/serve.sh"],
            cwd=REPO,
            env=env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_ready(port, server, log_path)
            assignment, sessions, tokens = _seed(args.assessors, args.per_turn)
            print(f"stack on :{port}, cache on :{cache.port}; {args.assessors} assessors and 2 API scripts")
            job_id = _job_start(args.per_turn)
            started = time.monotonic()
            clients = [
                threading.Thread(target=_assessor, args=(port, name, session, assignment, log))
                for name, session in sessions
            ] + [threading.Thread(target=_script, args=(port, token, log)) for token in tokens]
            for client in clients:
                client.start()
            windows: list[tuple[str, float, float, float]] = []
            for fault in faults:
                time.sleep(args.steady)
                done, total = _job_running(job_id, fault)
                print(f"{fault}: the judge job runs, {done}/{total} units done")
                down = time.monotonic()
                if fault == "tasks":
                    print(_kill_task_worker(port, job_id, down + 60))
                elif fault == "web":
                    print(_kill_web_worker(port))
                else:
                    (cache if fault == "redis" else postgres).stop()
                time.sleep(max(0.0, down + args.down - time.monotonic()))
                if fault in ("redis", "postgres"):
                    (cache if fault == "redis" else postgres).start()
                up = time.monotonic()
                if fault == "postgres":
                    took = _job_resume_once_interrupted(job_id, up, within_s=10)
                    print(
                        f"postgres: back; the judge job read interrupted {took:.1f} s later and was resumed"
                    )
                windows.append((fault, down, up, up + args.steady))
            time.sleep(args.steady)
            llm.latency = 0.0  # the faults are over: the job may finish
            log.until = time.monotonic()
            for client in clients:
                client.join()
            ended = time.monotonic()
            ok = _report(log, started, ended, windows, args.assessors)
            ok = _job_report(job_id, timeout=120) and ok
            print("OK" if ok else "FAILED")
            return 0 if ok else 1
        finally:
            log.until = min(log.until, time.monotonic())  # a fault that failed must not leave clients running
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
            cache.stop()
            llm.stop()
            try:
                from django.db import connections

                connections.close_all()
            except Exception:  # noqa: BLE001 - Django was never set up when the stack did not start
                pass
            _pg("dropdb", "--if-exists", "--force", DB)


def _report(
    log: Log, started: float, ended: float, windows: list[tuple[str, float, float, float]], n: int
) -> bool:
    from django.db import connections

    from annotation.models import RelevanceJudgment

    connections.close_all()  # the cluster may have been restarted under this process's connection
    timed = list(
        RelevanceJudgment.objects.filter(
            turn__collection__name="outage-check", judge__user__isnull=False
        ).values_list("judge__user__username", "turn_id", "passage_id", "time_spent_ms")
    )
    recounted = sum(time_spent != GRADE_MS for *_pair, time_spent in timed)
    rows = [(username, turn_pk, passage_id) for username, turn_pk, passage_id, _time in timed]
    stored, acknowledged = collections.Counter(rows), set(log.acknowledged)
    duplicated = sum(c - 1 for c in stored.values()) + len(log.acknowledged) - len(acknowledged)
    lost = len(acknowledged - set(stored))
    unacknowledged = len(set(stored) - acknowledged)
    ok = duplicated == 0 and lost == 0 and recounted == 0
    print(f"before the first fault: {_count(log, started, windows[0][1] if windows else ended)}")
    for fault, down, up, settled in windows:
        during, after = _count(log, down, up), _count(log, up, settled)
        errors = sum(
            count
            for phase in (during, after)
            for statuses in phase.values()
            for status, count in statuses.items()
            if isinstance(status, int) and status >= 500 and status != 503
        )
        unavailable = sum(s.get(503, 0) for s in during.values()) + sum(s.get(503, 0) for s in after.values())
        print(f"{fault} down {up - down:.1f} s: {during}")
        print(f"{fault} back, next {settled - up:.0f} s: {after}")
        # Grades sent while the service was down: the fault landed on assessors at work, not on a pool
        # they had finished.
        graded = sum(during.get("grade", {}).values())
        print(f"{fault}: {errors} x 5xx other than 503, {unavailable} x 503, {graded} grades sent while down")
        # Killing a worker stops nothing the others need: no 503 either.
        ok = ok and errors == 0 and graded > 0 and not (fault in ("redis", "tasks", "web") and unavailable)
    print(
        f"grades: {len(log.acknowledged)} answered 2xx by {n} assessors, {len(rows)} stored; duplicated "
        f"{duplicated}, lost {lost}, stored without a 2xx {unacknowledged}, time counted twice {recounted}; "
        f"client errors {len(log.errors)}" + (f" (first: {log.errors[0]})" if log.errors else "")
    )
    return ok


if __name__ == "__main__":
    sys.exit(main())
