"""Background tasks in the tests: the queue's own worker run here, or the immediate backend."""

from __future__ import annotations

import os
import subprocess
import sys

from django.db import connection, transaction
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from assay.workers import worker_lock_take
from tests.conftest import REPO

IMMEDIATE = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}


def tasks_run_ready() -> int:
    """Run every task waiting in the database queue, here and in order, through db_worker's own Worker
    (its loop opens an exclusive transaction of its own, which a test's transaction cannot hold); the
    number of tasks run. It holds a worker's lock meanwhile, as a task worker does: without it, a
    running task's job reads as interrupted."""
    worker = Worker(
        queue_names=["*"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=f"tests-{os.getpid()}",
    )
    ran = 0
    lock = worker_lock_take(worker.worker_id)
    try:
        while True:
            with transaction.atomic():
                result = DBTaskResult.objects.ready().get_locked()
                if result is None:
                    return ran
                result.claim(worker.worker_id)
            worker.run_task(result)
            ran += 1
    finally:
        lock.close()


def task_left_by_a_dead_worker(task_id: str) -> None:
    """What a worker killed in the middle of a task leaves: the task running, claimed by a worker whose
    lock PostgreSQL freed with its connection."""
    DBTaskResult.objects.get(id=task_id).claim("dead-worker")


def worker_env(**extra: str) -> dict[str, str]:
    """The environment of a worker process on the test database (PostgreSQL: another process reaches
    it; the SQLite test database lives in this process's memory)."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        **extra,
    }
    env.pop("TEST_DATABASE_NAME", None)
    return env


def worker_start(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """A real `manage.py task_worker` process on the test database."""
    command = [
        sys.executable,
        "manage.py",
        "task_worker",
        "--no-startup-delay",
        "--interval",
        "0.1",
    ]
    return subprocess.Popen([*command, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL)


def worker_batch(env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """A real `manage.py task_worker --batch` on the test database, run until the queue is empty; it must
    end well (its stderr's end is the failure message)."""
    finished = subprocess.run(
        [sys.executable, "manage.py", "task_worker", "--batch", "--no-startup-delay"],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    return finished
