"""The task worker: one `db_worker` loop (django-tasks-db's) that says it lives (`manage.py task_worker`).

Exactly one layer keeps the workers running: a process manager starts each worker process and starts it
again when it ends (scripts/serve.sh's and scripts/run.sh's keep loop, systemd's template unit
deploy/systemd/assay-worker@.service in production). Nothing here restarts anything.

While it runs, a worker holds a PostgreSQL advisory lock keyed by its id, on a connection of its own. The
queue's table records which worker claimed each task, and PostgreSQL frees a session's locks the moment
its connection ends, so a task marked running whose worker's lock is free has lost its worker: killed
outright (SIGKILL, the OOM killer), its job reads as interrupted at once, from any machine
(core.background.tasks_unfinished). A worker whose lock connection breaks (PostgreSQL restarted, the
network lost) can no longer vouch for its task, and its other connections are as broken: it exits at
once, and its manager starts a fresh process, which connects anew.

Stopped (SIGTERM, Ctrl-C), a worker finishes the task in hand and takes no other; still busy after
`grace_s`, it stops the task, which queues its job again for the next worker
(core.background.requeue_on_shutdown). A second signal stops the task at once.
"""

from __future__ import annotations

import logging
import os
import secrets
import select
import signal
import socket
import threading
from types import FrameType
from typing import Any

import psycopg
from django.db import connections
from django_tasks_db.management.commands.db_worker import Worker

from assay.upkeep import upkeep_schedule
from core.background import WORKER_LOCK_CLASS

log = logging.getLogger(__name__)

CHECK_EVERY_S = 5.0  # the lock's connection is also checked this often, besides whenever its socket wakes
EXIT_LOST_DATABASE = 75  # EX_TEMPFAIL: the manager starts the worker again


class WorkerLockError(Exception):
    """The worker cannot take its lock: another live worker has its id, or the database does not answer."""


def worker_id_default() -> str:
    """Readable in the queue's table: the host, then the process. A random part keeps a restarted worker
    from taking its dead predecessor's id, as one would in a container, where the host name survives a
    restart and the worker is process 1 again: the dead worker's task would then read as running for as
    long as its successor lives."""
    return f"{socket.gethostname()[:40]}-{secrets.token_hex(4)}-{os.getpid()}"


class TaskWorker(Worker):
    """db_worker's loop, stopping within `grace_s` of the first signal."""

    def __init__(self, *, grace_s: float, **options: Any) -> None:
        super().__init__(**options)
        self.grace_s = grace_s

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        busy = self.running and self.running_task
        super().shutdown(signum, frame)  # idle: exits here; busy: finishes its task, then stops
        if busy:
            # At the end of the grace, the alarm is the second signal: the task stops and queues its job.
            signal.signal(signal.SIGALRM, self.shutdown)
            signal.setitimer(signal.ITIMER_REAL, self.grace_s)


def worker_lock_take(worker_id: str) -> psycopg.Connection[Any]:
    """A connection of its own (outside Django's pool, which hands connections from thread to thread)
    holding the worker's advisory lock for as long as it lasts."""
    params = connections["default"].get_connection_params()
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    try:
        lock = psycopg.connect(
            **params,
            autocommit=True,
            application_name=f"assay task worker {worker_id}"[:63],
            # Either side notices a vanished peer in about 30 s instead of the system's two hours.
            keepalives=1,
            keepalives_idle=15,
            keepalives_interval=5,
            keepalives_count=3,
        )
        # And the server too: a worker cut off by the network exits, and its lock must be freed soon after,
        # not when the server's system keepalive (two hours) notices, or its task reads as running meanwhile.
        lock.execute("SET tcp_keepalives_idle = 15")
        lock.execute("SET tcp_keepalives_interval = 5")
        lock.execute("SET tcp_keepalives_count = 3")
        row = lock.execute(
            "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (WORKER_LOCK_CLASS, worker_id)
        ).fetchone()
    except psycopg.Error as exc:
        raise WorkerLockError(f"the database does not answer: {exc}".strip()) from exc
    if not (row and row[0]):
        lock.close()
        raise WorkerLockError(f"worker id {worker_id} is taken by a live worker; give each its own")
    return lock


def _watch(lock: psycopg.Connection[Any], worker_id: str, stopping: threading.Event) -> None:
    """Exit the process the moment the lock's connection breaks (a closed socket wakes `select`)."""
    while not stopping.is_set():
        try:
            select.select([lock.fileno()], [], [], CHECK_EVERY_S)
            if not stopping.is_set():
                lock.execute("SELECT 1")
        except (psycopg.Error, OSError, ValueError) as exc:
            if stopping.is_set():  # closed by worker_run on the way out
                return
            log.error("task worker %s lost its database connection (%s): exiting", worker_id, exc)
            logging.shutdown()
            os._exit(EXIT_LOST_DATABASE)


def worker_run(*, worker: TaskWorker) -> None:
    """Take the worker's lock, queue the daily upkeep unless it waits already, then run db_worker's loop
    until it is stopped (or, with `batch`, the queue is empty)."""
    lock = worker_lock_take(worker.worker_id)
    stopping = threading.Event()
    threading.Thread(target=_watch, args=(lock, worker.worker_id, stopping), daemon=True).start()
    try:
        upkeep_schedule()
        worker.configure_signals()
        worker.run()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        stopping.set()
        lock.close()
