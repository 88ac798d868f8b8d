"""Load check of the production stack (`make serve`: gunicorn, task workers, PostgreSQL, Redis, DEBUG off).

Starts scripts/serve.sh on its own database, seeds one relevance campaign, then runs N simulated
assessors for S seconds, each doing what the relevance page's JavaScript does with a signed-in session
and its CSRF token: the queue's "next unit" form and the unit's page once per unit, then per passage one
JSON grade whose answer carries the next passage, and the queue page when the answer says the unit is
complete. Then the same number of clients on a trivial view (/healthz) for comparison. It prints throughput, p50/p95 per judgment, the 5xx count, and checks that every grade
answered 2xx is stored exactly once.

    .venv/bin/python bench/bench_stack.py                 # 200 assessors, 60 s
    .venv/bin/python bench/bench_stack.py --assessors 50 --seconds 15
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import database_create, database_drop, django_disconnect  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PG_PORT = os.environ.get("PG_PORT", "55432")
REDIS_PORT = os.environ.get("REDIS_PORT", "56379")
DB = "assay_bench_stack"
SECRET_KEY = "bench-stack-" + "b" * 60
_CSRF_INPUT = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "TEST_DATABASE_NAME", "DEBUG"}}
    return env | {
        "PG_PORT": PG_PORT,
        "REDIS_PORT": REDIS_PORT,
        "SERVE_DB": DB,
        "SERVE_REDIS_DB": "8",
        "SERVE_HTTP": "1",  # no TLS proxy in front here
        "PORT": str(port),
        "SECRET_KEY": SECRET_KEY,
        "LOG_LEVEL": "WARNING",
    }


def _seed(n_assessors: int, n_turns: int, per_turn: int) -> tuple[int, list[str]]:
    """One pool of n_turns x per_turn pairs, one assignment for every assessor; a signed-in session each
    (made here: logging 200 people in would only measure password hashing)."""
    os.environ.update(
        DATABASE_URL=f"postgres://assay@127.0.0.1:{PG_PORT}/{DB}", DEBUG="0", SECRET_KEY=SECRET_KEY
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from annotation.relevance.assignments import assignment_create
    from devtools.load_data import load_pool_build, signed_in_sessions

    pool = load_pool_build(name="bench-stack", n_turns=n_turns, per_turn=per_turn)
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"a{i}", password=make_password(None)) for i in range(n_assessors)]
    )
    assignment = assignment_create(pool=pool, name="bench-stack", assessors=users, with_ptkb=False)
    sessions = signed_in_sessions(users)
    return assignment.pk, sessions


class Browser:
    def __init__(self, port: int, session: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.port = port
        self.cookies = {"sessionid": session}
        self.statuses: list[int] = []

    def request(self, method: str, url: str, body: bytes | None = None, headers: dict | None = None) -> tuple:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **(headers or {})}
        try:
            self.conn.request(method, url, body=body, headers=headers)
            response = self.conn.getresponse()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.conn.request(method, url, body=body, headers=headers)
            response = self.conn.getresponse()
        data = response.read()
        self.statuses.append(response.status)
        for value in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, response.headers, data

    def follow(self, status: int, headers: Any, data: bytes) -> tuple:
        while status in (301, 302, 303):
            status, headers, data = self.request("GET", urlsplit(headers["Location"]).path)
        return status, headers, data


def _attr(page: bytes, name: str) -> str:
    found = re.search(rb"data-" + name.encode() + rb'="([^"]*)"', page)
    if found is None:
        raise ValueError(f"no data-{name} on the page")
    return found.group(1).decode()


def _assessor(port: int, session: str, assignment: int, until: float, out: dict) -> None:
    b = Browser(port, session)
    b.request("GET", "/relevance/")  # the queue page; sets the CSRF cookie
    step = None
    while time.monotonic() < until:
        if step is None:
            started = time.perf_counter()
            form = urlencode({"csrfmiddlewaretoken": b.cookies.get("csrftoken", "")}).encode()
            status, headers, page = b.request(
                "POST",
                f"/relevance/{assignment}/next/",
                form,
                {"Content-Type": "application/x-www-form-urlencoded"},
            )
            if status == 302 and urlsplit(headers["Location"]).path.rstrip("/").endswith("/relevance"):
                break  # no work left
            status, headers, page = b.follow(status, headers, page)
            if status != 200:
                out["errors"].append(f"unit page {status}")
                break
            csrf = _CSRF_INPUT.search(page).group(1).decode()  # type: ignore[union-attr]
            slot, grade_url = int(_attr(page, "slot")), _attr(page, "grade-url")
            resume_url = _attr(page, "resume-url")
            step = (int(_attr(page, "turn-pk")), _attr(page, "passage-id"))
            out["unit_loads"].append(time.perf_counter() - started)
        started = time.perf_counter()
        headers = {"Content-Type": "application/json", "X-CSRFToken": csrf}
        # One request per judgment, as relevance.js makes it: the grade, answered with the next passage.
        body = json.dumps(
            {"turn_pk": step[0], "passage_id": step[1], "grade": 2, "time_spent_ms": 1500, "next": True}
        )
        status, _h, data = b.request("POST", grade_url, body.encode(), headers)
        out["latencies"].append(time.perf_counter() - started)
        if status != 201:
            out["errors"].append(f"grade {status} {data[:120]!r}")
            break
        out["granted"].append((slot, *step))
        answer = json.loads(data)
        nxt = answer.get("next")
        if nxt and nxt["turn_pk"] == step[0]:
            step = (nxt["turn_pk"], nxt["passage_id"])
        else:
            # The unit is done: the queue page, as the script goes there (the resume URL for another turn).
            url = "/relevance/" if answer.get("unit_complete") else resume_url
            status, _h, _page = b.follow(*b.request("GET", url))
            if status != 200:
                out["errors"].append(f"after the unit {status}")
                break
            step = None
    out["statuses"].extend(b.statuses)


def _trivial(port: int, until: float, out: dict) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while time.monotonic() < until:
        started = time.perf_counter()
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        out["statuses"].append(response.status)
        out["latencies"].append(time.perf_counter() - started)


def _client_process(
    kind: str, port: int, sessions: list[str], assignment: int, until: float, queue: Any
) -> None:
    results = []
    threads = []
    for session in sessions:
        out: dict = {"latencies": [], "unit_loads": [], "granted": [], "errors": [], "statuses": []}
        results.append(out)
        target = _assessor if kind == "browser" else _trivial
        args = (port, session, assignment, until, out) if kind == "browser" else (port, until, out)
        threads.append(threading.Thread(target=target, args=args))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(results)


def _phase(
    kind: str, port: int, sessions: list[str], assignment: int, seconds: float, processes: int
) -> dict:
    queue: Any = multiprocessing.Queue()
    until = time.monotonic() + seconds
    chunks = [sessions[i::processes] for i in range(processes)]
    procs = [
        multiprocessing.Process(target=_client_process, args=(kind, port, chunk, assignment, until, queue))
        for chunk in chunks
        if chunk
    ]
    started = time.monotonic()
    for proc in procs:
        proc.start()
    merged: dict = {"latencies": [], "unit_loads": [], "granted": [], "errors": [], "statuses": []}
    for _ in procs:
        for out in queue.get():
            for key in merged:
                merged[key].extend(out[key])
    for proc in procs:
        proc.join()
    merged["elapsed"] = time.monotonic() - started
    return merged


def _p(values: list[float], q: int) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q / 100))] * 1000 if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--per-turn", type=int, default=50, help="passages per turn (one unit each)")
    parser.add_argument("--processes", type=int, default=4, help="client processes (threads share them)")
    args = parser.parse_args()
    subprocess.run(
        ["bash", "scripts/services.sh", "start", str(REPO / ".tmp"), PG_PORT, REDIS_PORT],
        cwd=REPO,
        check=True,
    )
    database_create(DB)
    port = _free_port()
    log = open(REPO / ".tmp" / "bench-stack.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        ["bash", "scripts/serve.sh"],
        cwd=REPO,
        env=_env(port),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise SystemExit(f"serve.sh ended; see {log.name}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        n_turns = max(100, int(args.assessors * 2))
        assignment, sessions = _seed(args.assessors, n_turns, args.per_turn)
        print(f"stack on :{port}; {args.assessors} assessors, {n_turns} units x {args.per_turn} passages")
        browser = _phase("browser", port, sessions, assignment, args.seconds, args.processes)
        trivial = _phase("trivial", port, sessions, assignment, min(args.seconds, 20), args.processes)

        from annotation.models import RelevanceJudgment

        stored = RelevanceJudgment.objects.filter(turn__collection__name="bench-stack").count()
        granted = browser["granted"]
        server_errors = sum(1 for s in browser["statuses"] + trivial["statuses"] if s >= 500)
        duplicated = len(granted) - len(set(granted))
        lost = len(set(granted)) - stored if stored <= len(set(granted)) else 0
        extra = stored - len(set(granted)) if stored > len(set(granted)) else 0
        b_rate = len(browser["latencies"]) / browser["elapsed"]
        t_rate = len(trivial["latencies"]) / trivial["elapsed"]
        print(
            f"browser loop: {len(browser['latencies'])} judgments in {browser['elapsed']:.1f} s = {b_rate:.0f}/s, "
            f"p50 {_p(browser['latencies'], 50):.0f} ms, p95 {_p(browser['latencies'], 95):.0f} ms per judgment "
            f"(grade, answered with the next passage); unit pages p95 {_p(browser['unit_loads'], 95):.0f} ms"
        )
        print(
            f"trivial view: {len(trivial['latencies'])} requests in {trivial['elapsed']:.1f} s = {t_rate:.0f}/s, "
            f"p50 {_p(trivial['latencies'], 50):.0f} ms, p95 {_p(trivial['latencies'], 95):.0f} ms; "
            f"browser/trivial throughput {b_rate / t_rate:.2f}"
        )
        print(
            f"5xx: {server_errors}; 2xx grades {len(granted)}, stored {stored}, duplicated {duplicated}, "
            f"lost {lost}, stored without a 2xx {extra}; client errors {len(browser['errors'])}"
            + (f" (first: {browser['errors'][0]})" if browser["errors"] else "")
        )
        ok = server_errors == 0 and duplicated == 0 and lost == 0 and extra == 0
        print("OK" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        if "django.db" in sys.modules:  # Django was set up to seed: its connections hold the database
            django_disconnect()
        database_drop(DB)
        log.close()


if __name__ == "__main__":
    sys.exit(main())
