"""Background jobs: the bookkeeping every job a task worker runs keeps on its row.

A page records a job (an upload's import, a judge job, a budget simulation, a crowd aggregation) and
queues its task in one transaction (core/background.py); the worker marks it running, then done or
failed, and the page follows its `status`. Each job model inherits `BackgroundJob` and keeps what is its
own: its inputs, its outcome and its message field (`error` or `message`, one column each already).

Abstract models need no installed app, so this module lives in core, which is a plain package.
"""

from __future__ import annotations

from django.db import models


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
    JobStatus's, whatever the words."""
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
