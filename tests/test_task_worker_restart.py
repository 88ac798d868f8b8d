"""A task worker across a restart of PostgreSQL, on a cluster of the test's own (the shared one is never
restarted): the worker exits when its connection dies instead of looping on a closed connection, its
process manager (scripts/keep.sh, as make serve and make run run it) starts it again, and once the
database is back the new worker takes the next task."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from assay import embedded_db
from tests.conftest import REPO
from tests.test_readme import free_port


def _until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture
def cluster() -> Iterator[dict[str, object]]:
    # Outside pytest's own temporary folder: a pytest started meanwhile (by anyone) takes back the others'
    # right to traverse it, and the server runs as a user of its own as root.
    folder = Path(tempfile.mkdtemp(prefix="assay-restart-"))
    data, port = folder / "pgdata", free_port()
    url = embedded_db.start(data=data, at_port=port, database="restart")
    env = {k: v for k, v in os.environ.items() if k not in {"TEST_DATABASE_NAME", "DJANGO_SETTINGS_MODULE"}}
    env |= {"DATABASE_URL": url, "DEBUG": "0", "LOG_LEVEL": "INFO"}
    try:
        # What a worker and the upkeep task touch (judging: the stored reports the upkeep prunes).
        for app in ("sessions", "django_tasks_database", "judging"):
            migrated = subprocess.run(
                [sys.executable, "manage.py", "migrate", app, "--noinput", "-v", "0"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert migrated.returncode == 0, migrated.stderr[-2000:]
        yield {"data": data, "port": port, "url": url, "env": env}
    finally:
        embedded_db.stop(data=data)
        shutil.rmtree(folder, ignore_errors=True)


def _tasks(url: str) -> list[tuple[str, str, str]]:
    """(id, status, last worker) of every task, oldest first; none while the database is down."""
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            rows = conn.execute(
                "SELECT id::text, status, worker_ids ->> -1 FROM django_tasks_database_dbtaskresult"
                " ORDER BY enqueued_at"
            ).fetchall()
    except psycopg.OperationalError:
        return []
    return [(task_id, status, worker or "") for task_id, status, worker in rows]


def test_a_worker_exits_when_postgres_restarts_and_its_successor_takes_the_next_task(cluster, tmp_path):
    url, env = str(cluster["url"]), dict(cluster["env"])
    log = open(tmp_path / "keep.log", "w+")  # noqa: SIM115  (closed below)
    keeper = subprocess.Popen(
        [
            "bash",
            "scripts/keep.sh",
            "task worker",
            str(tmp_path / "worker.pid"),
            sys.executable,
            "manage.py",
            "task_worker",
            "--interval",
            "0.1",
            "--no-startup-delay",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        # Started, the worker queues the daily upkeep and runs it: a task taken.
        _until(lambda: any(s == "SUCCESSFUL" for _i, s, _w in _tasks(url)), 60, "the first task run")
        first_worker = next(w for _i, s, w in _tasks(url) if s == "SUCCESSFUL")
        first_pid = int((tmp_path / "worker.pid").read_text())

        assert embedded_db.stop(data=cluster["data"])
        assert not embedded_db.accepts_connections(cluster["port"])
        _until(lambda: not Path(f"/proc/{first_pid}/cmdline").exists(), 30, "the worker to exit")
        time.sleep(3)  # its successors meet a database that is down, and exit in turn
        embedded_db.start(data=cluster["data"], at_port=cluster["port"], database="restart")

        queued = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                "from assay.upkeep import upkeep_daily; print(upkeep_daily.enqueue().id)",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert queued.returncode == 0, queued.stderr[-2000:]
        task_id = queued.stdout.strip().splitlines()[-1]
        _until(
            lambda: any(i == task_id and s == "SUCCESSFUL" for i, s, _w in _tasks(url)),
            60,
            "the next task run by the new worker",
        )
        (taken_by,) = [w for i, _s, w in _tasks(url) if i == task_id]
        assert taken_by != first_worker
        log.seek(0)
        assert "keep.sh: task worker ended with status" in log.read()
    finally:
        keeper.send_signal(signal.SIGTERM)
        try:
            keeper.wait(timeout=30)
        except subprocess.TimeoutExpired:
            keeper.kill()
        log.close()
    assert not (tmp_path / "worker.pid").exists()  # the keeper stopped its worker and cleaned up
