"""Background jobs: the bookkeeping every job a task worker runs keeps on its row, and its moves.

A page records a job (an upload's import, a judge job, a budget simulation, a crowd aggregation) and
queues its task in one transaction (core/background.py); the worker marks it running, then done or
failed, and the page follows its `status`. Each job model inherits `BackgroundJob` and keeps what is its
own: its inputs, its outcome and its message field (`error` or `message`, one column each already).

Abstract models need no installed app, so this module lives in core, which is a plain package.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone
from django_tasks.base import Task

from core.background import task_abandon, tasks_unfinished


class JobStatus(models.TextChoices):
    """The four states of every job. A job whose pages name them otherwise declares its own `Status`
    with these values and its words, and passes it to `status_field`."""

    PENDING = "pending", "Waiting for a worker"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


FINISHED = (JobStatus.DONE, JobStatus.FAILED)


def status_field(words: type[models.TextChoices]) -> models.CharField[str, str]:
    """The `status` column of a job, with `words` naming its states on the pages. The values are always
    JobStatus's: the shared moves below write them, whatever the words."""
    if sorted(words.values) != sorted(JobStatus.values):
        raise TypeError(f"{words.__qualname__} must have the values {', '.join(JobStatus.values)}")
    return models.CharField(max_length=10, choices=words.choices, default=JobStatus.PENDING)


class BackgroundJob(models.Model):
    """A job run by a task worker: its state, the task last queued for it, and when it ran."""

    status = status_field(JobStatus)
    task_id = models.CharField(
        max_length=64, blank=True, help_text="The background task last queued to run the job (empty: none)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


def _rows(job: BackgroundJob) -> models.QuerySet[Any]:
    return type(job)._default_manager.filter(pk=job.pk)


def job_queue(*, job: BackgroundJob, task: Task[Any, Any], **reset: Any) -> None:
    """Mark the job waiting (with the `reset` columns), enqueue `task` for it and record the task.

    Call it inside the caller's transaction: the queue lives in the same database, so no worker sees the
    task before the job's row is committed. The row is marked waiting before the task is enqueued, since
    a backend that runs tasks at once (the tests' immediate one) finishes the job inside `enqueue`. A
    task the job had before that still waits or runs (its worker died, or is stopping) is marked failed:
    the new one replaces it. `job` may be a bare instance with only its primary key.
    """
    rows = _rows(job)
    task_abandon(rows.values_list("task_id", flat=True).first() or "")
    rows.update(status=JobStatus.PENDING, **reset)
    result = task.enqueue(job.pk)
    rows.update(task_id=str(result.id))


def job_start(*, job: BackgroundJob, **also: Any) -> None:
    """Mark the job running from now on its row (with the `also` columns)."""
    _rows(job).update(status=JobStatus.RUNNING, started_at=timezone.now(), **also)


def job_end(*, job: BackgroundJob, status: str, **also: Any) -> None:
    """Mark the job done or failed, as of now, on its row (with the `also` columns: its outcome)."""
    if status not in FINISHED:
        raise ValueError(f"a job ends done or failed, not {status}")
    _rows(job).update(status=status, finished_at=timezone.now(), **also)


def job_task_gone(job: BackgroundJob, unfinished_tasks: set[str] | None) -> bool:
    """Unfinished, yet the task queued for it is not among `unfinished_tasks` (the tasks that still wait
    or run; None when the backend cannot tell): its worker died or the queue lost it. A job run without
    a task (an upload imported before its page answered) has none to lose."""
    return (
        not job.finished
        and bool(job.task_id)
        and unfinished_tasks is not None
        and job.task_id not in unfinished_tasks
    )


def job_interrupted(job: BackgroundJob) -> bool:
    """`job_task_gone`, asking the queue about this job's task (one query; none for a finished job)."""
    return not job.finished and job_task_gone(job, tasks_unfinished([job.task_id]))
