"""Background work: what every feature's `tasks` module shares on top of Django's tasks API.

Every job a page starts (a judge job, a large upload) is a task enqueued on the `default` backend: a
queue kept in the database (django-tasks-db), so the job's row and its task commit in one transaction,
and the work runs in `db_worker` processes apart from the web server (`manage.py task_workers` starts and
supervises them). A restart of the web server therefore touches no job. A worker that stops between
tasks loses nothing; one told to stop in the middle of a task hands the job back to the queue
(`requeue_on_shutdown`), and one killed outright has its tasks marked failed by its supervisor
(`worker_tasks_abandon`), which the pages show as interrupted, with a button that queues the job again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from django_tasks import task_backends
from django_tasks.base import TaskResultStatus
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult

log = logging.getLogger(__name__)

UNFINISHED = (TaskResultStatus.READY, TaskResultStatus.RUNNING)


def tasks_unfinished(task_ids: Iterable[str]) -> set[str] | None:
    """Which of these tasks still wait or run (one query), or None when the backend cannot tell.

    A job whose task is no longer among them, yet which never finished, lost its worker.
    """
    ids = [task_id for task_id in task_ids if task_id]
    if not isinstance(task_backends["default"], DatabaseBackend):
        return None
    if not ids:
        return set()
    rows = DBTaskResult.objects.filter(id__in=ids, status__in=UNFINISHED).values_list("id", flat=True)
    return {str(task_id) for task_id in rows}


def task_abandon(task_id: str) -> None:
    """Mark a task whose worker died in the middle of it as failed, so the queue's table says so too
    (a killed worker leaves it "running" for good); a task that ended is left as it is."""
    if task_id and isinstance(task_backends["default"], DatabaseBackend):
        DBTaskResult.objects.filter(id=task_id, status__in=UNFINISHED).update(status=TaskResultStatus.FAILED)


def worker_tasks_abandon(worker_id: str) -> int:
    """Mark failed the tasks a dead worker was running (the queue records which worker claimed a task
    last); how many. Never raises: the supervisor calling it must outlive a database that is down too,
    and the job then shows as interrupted after its silence instead."""
    if not worker_id or not isinstance(task_backends["default"], DatabaseBackend):
        return 0
    try:
        running = DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING).values_list("id", "worker_ids")
        ids = [task_id for task_id, workers in running if workers and workers[-1] == worker_id]
        if ids:
            DBTaskResult.objects.filter(id__in=ids, status=TaskResultStatus.RUNNING).update(
                status=TaskResultStatus.FAILED
            )
        return len(ids)
    except Exception:
        log.exception("could not mark the tasks of dead worker %s failed", worker_id)
        return 0


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
