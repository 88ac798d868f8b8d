"""Periodic upkeep as background tasks: each run queues the next, so the task workers need no scheduler."""

from __future__ import annotations

from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone
from django_tasks import task
from django_tasks.base import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from judging.reports.store import reports_prune

EVERY = timedelta(days=1)


# Finished tasks are kept this long in the queue's table (what a job's task said), then deleted.
KEEP_FINISHED_TASKS_DAYS = 14


@task()
def upkeep_daily() -> None:
    """Delete expired sessions, which Django leaves in their table until told (`clearsessions`), the
    queue's finished tasks older than KEEP_FINISHED_TASKS_DAYS and the stored reports' older figures (a
    few kept per report and choices); then queue the next run a day later."""
    call_command("clearsessions")
    call_command("prune_db_task_results", min_age_days=KEEP_FINISHED_TASKS_DAYS, verbosity=0)
    reports_prune()
    upkeep_schedule(delay=EVERY)


def upkeep_schedule(*, delay: timedelta = timedelta(0)) -> None:
    """Queue the upkeep to run after `delay`, unless a run already waits (workers restarted: one is kept)."""
    waiting = DBTaskResult.objects.filter(task_path=upkeep_daily.module_path, status=TaskResultStatus.READY)
    if not waiting.exists():
        upkeep_daily.using(run_after=timezone.now() + delay).enqueue()
