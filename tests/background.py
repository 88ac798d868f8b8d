"""Background tasks in the tests: the queue's own worker run here, or the immediate backend."""

from __future__ import annotations

import os
import subprocess
import sys

from django.db import connection, transaction
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from tests.conftest import REPO

IMMEDIATE = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}


def tasks_run_ready() -> int:
    """Run every task waiting in the database queue, here and in order, through db_worker's own Worker
    (its loop opens an exclusive transaction of its own, which a test's transaction cannot hold); the
    number of tasks run."""
    worker = Worker(
        queue_names=["*"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="tests",
    )
    ran = 0
    while True:
        with transaction.atomic():
            result = DBTaskResult.objects.ready().get_locked()
            if result is None:
                return ran
            result.claim(worker.worker_id)
        worker.run_task(result)
        ran += 1


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
    """A real `manage.py db_worker` process on the test database."""
    command = [
        sys.executable,
        "manage.py",
        "db_worker",
        "--no-reload",
        "--no-startup-delay",
        "--interval",
        "0.1",
    ]
    return subprocess.Popen([*command, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL)
