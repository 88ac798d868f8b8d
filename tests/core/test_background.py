"""Which tasks still wait or run (core.background.tasks_unfinished): a running task counts only while the
worker that claimed it holds its lock, which PostgreSQL frees the moment that worker's connection ends."""

from __future__ import annotations

import os
import time

import pytest
from django.db import connection, transaction
from django_tasks_db.models import DBTaskResult

from assay.upkeep import upkeep_daily
from assay.workers import WorkerLockError, worker_id_default, worker_lock_take
from core.background import tasks_unfinished

pytestmark = pytest.mark.django_db


def _claimed(worker_id: str) -> str:
    task_id = str(upkeep_daily.enqueue().id)
    with transaction.atomic():
        DBTaskResult.objects.select_for_update().get(id=task_id).claim(worker_id)
    return task_id


def _close(lock) -> None:
    """Close the lock's connection, as the worker's death does, and wait until its server process has let
    go of its locks (a moment after the client hangs up)."""
    backend = lock.info.backend_pid
    lock.close()
    deadline = time.monotonic() + 10
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT 1 FROM pg_locks WHERE pid = %s", [backend])
            if cursor.fetchone() is None or time.monotonic() > deadline:
                return
            time.sleep(0.01)


def test_a_waiting_task_is_unfinished():
    task_id = str(upkeep_daily.enqueue().id)

    assert tasks_unfinished([task_id]) == {task_id}


def test_a_running_task_is_unfinished_only_while_its_worker_holds_its_lock():
    task_id = _claimed("worker-a")
    assert tasks_unfinished([task_id]) == set()  # claimed by a worker that holds no lock: gone

    lock = worker_lock_take("worker-a")
    try:
        assert tasks_unfinished([task_id]) == {task_id}
        assert tasks_unfinished([_claimed("worker-b")]) == set()  # another worker's lock says nothing
    finally:
        _close(lock)  # as the worker's death closes it

    assert tasks_unfinished([task_id]) == set()


def test_a_running_task_of_a_worker_that_claimed_it_again_counts_its_last_worker():
    task_id = _claimed("worker-a")
    DBTaskResult.objects.filter(id=task_id).update(worker_ids=["worker-a", "worker-b"])
    lock = worker_lock_take("worker-a")
    try:
        assert tasks_unfinished([task_id]) == set()
    finally:
        lock.close()


def test_a_worker_id_is_taken_by_one_live_worker_at_a_time():
    lock = worker_lock_take("twin")
    try:
        with pytest.raises(WorkerLockError, match="worker id twin is taken by a live worker"):
            worker_lock_take("twin")
    finally:
        _close(lock)
    worker_lock_take("twin").close()  # free again once the first is gone


def test_a_worker_lock_connection_asks_the_server_to_notice_a_vanished_worker_within_seconds():
    lock = worker_lock_take("keepalive")
    try:
        settings = dict(
            lock.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN"
                " ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count')"
            ).fetchall()
        )
    finally:
        lock.close()

    assert settings == {
        "tcp_keepalives_idle": "15",
        "tcp_keepalives_interval": "5",
        "tcp_keepalives_count": "3",
    }


def test_a_default_worker_id_differs_between_two_workers_of_one_host_and_process():
    # In a container the host name survives a restart and the worker is process 1 again.
    first, second = worker_id_default(), worker_id_default()

    assert first != second
    assert first.endswith(f"-{os.getpid()}") and len(first) <= 64
