"""Background work: what every feature's `tasks` module shares on top of Django's tasks API.

Every job a page starts (a judge job, a large upload) is a task enqueued on the `default` backend: a
queue kept in the database (django-tasks-db), so the job's row and its task commit in one transaction,
and the work runs in task worker processes apart from the web server (`manage.py task_worker`, kept
running by a process manager: assay/workers.py). A restart of the web server therefore touches no job. A
worker that stops between tasks loses nothing; one told to stop in the middle of a task hands the job
back to the queue (`requeue_on_shutdown`). A worker killed outright cannot say anything, so it says it
lives instead: it holds a PostgreSQL advisory lock (WORKER_LOCK_CLASS, its id) for as long as its
connection lasts, and PostgreSQL frees it the moment that connection ends. A task marked running whose
worker's lock is free is therefore gone (`tasks_unfinished`), and the pages show its job as interrupted
at once, with a button that queues it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django_tasks import task_backends
from django_tasks.base import TaskResultStatus
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

log = logging.getLogger(__name__)

UNFINISHED = (TaskResultStatus.READY, TaskResultStatus.RUNNING)

# The first key of every task worker's advisory lock (the two-key form); the second is hashtext(its id).
# A constant of its own keeps these locks apart from any other advisory lock taken on the database.
WORKER_LOCK_CLASS = 0x41535359  # "ASSY"


def worker_alive() -> RawSQL:
    """True for a task row whose last claiming worker holds its lock, on any machine: it still lives."""
    quote = connection.ops.quote_name
    worker_ids = f"{quote(DBTaskResult._meta.db_table)}.{quote('worker_ids')}"
    return RawSQL(
        "EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        f" AND l.classid = %s AND l.objid = hashtext({worker_ids} ->> -1)::oid)",
        (WORKER_LOCK_CLASS,),
        output_field=BooleanField(),
    )


def tasks_unfinished(task_ids: Iterable[str]) -> set[str] | None:
    """Which of these tasks still wait, or run on a worker that lives (one query), or None when the
    backend cannot tell.

    A job whose task is no longer among them, yet which never finished, lost its worker.
    """
    ids = [task_id for task_id in task_ids if task_id]
    if not isinstance(task_backends["default"], DatabaseBackend):
        return None
    if not ids:
        return set()
    rows = (
        DBTaskResult.objects.filter(id__in=ids)
        .alias(alive=worker_alive())
        .filter(Q(status=TaskResultStatus.READY) | Q(status=TaskResultStatus.RUNNING, alive=True))
        .values_list("id", flat=True)
    )
    return {str(task_id) for task_id in rows}


def task_abandon(task_id: str) -> None:
    """Mark a task whose worker died in the middle of it as failed, so the queue's table says so too
    (a killed worker leaves it "running" for good); a task that ended is left as it is."""
    if task_id and isinstance(task_backends["default"], DatabaseBackend):
        DBTaskResult.objects.filter(id=task_id, status__in=UNFINISHED).update(status=TaskResultStatus.FAILED)


@contextmanager
def requeue_on_shutdown(what: str, requeue: Callable[[], object]) -> Iterator[None]:
    """Run a task's body; if its worker is told to stop in the middle (SystemExit, KeyboardInterrupt: the
    worker's second SIGTERM or Ctrl-C), queue the job again before the worker goes, so the next worker
    resumes it instead of leaving it interrupted."""
    try:
        yield
    except (SystemExit, KeyboardInterrupt):
        log.warning("%s: the worker is stopping; queued again to resume", what)
        requeue()
        raise
