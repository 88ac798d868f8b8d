"""What a job's row says, read honestly: its totals from the call rows, and whether it still runs.

A job's counters are saved about once a second, so a worker killed with SIGKILL leaves them a little
behind and its status at "running" for good. The paid calls themselves are saved as each answer arrives:
their rows are the totals. A job is shown as interrupted when it waits or runs but the task queued for it
has ended, is gone, or runs on a worker that no longer holds its lock (it died: core/background.py), or,
for a worker that hangs or a machine lost unnoticed, when it is running but its row has not been touched
for JOB_STALE_AFTER_S seconds (runners save at least every PROGRESS_EVERY_S); resuming it (the Jobs page's
button, or starting the same work again) goes on from what is stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Sum
from django.utils import timezone

from core.background import tasks_unfinished
from core.jobs import job_task_gone
from core.wording import plural
from judging.models import JudgeJob, LlmCall

INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class CallTotals:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)


def _stale_after() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "JOB_STALE_AFTER_S", 120)))


def call_totals(job_ids: Iterable[int]) -> dict[int, CallTotals]:
    """The paid calls of each job, counted from its LlmCall rows (one query for all)."""
    rows = (
        LlmCall.objects.filter(job_id__in=list(job_ids))
        .values("job_id")
        .annotate(n=Count("id"), i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost_usd"))
    )
    return {
        row["job_id"]: CallTotals(row["n"], row["i"] or 0, row["o"] or 0, row["c"] or Decimal(0))
        for row in rows
    }


def totals_apply(job: JudgeJob, totals: CallTotals | None) -> None:
    """Put the totals of an LLM job's call rows on it (NLI jobs count pairs, not calls: left alone)."""
    if job.is_nli:
        return
    totals = totals or CallTotals()
    job.calls_made, job.input_tokens, job.output_tokens = (
        totals.calls,
        totals.input_tokens,
        totals.output_tokens,
    )
    job.cost_usd = totals.cost_usd


def job_state(job: JudgeJob, unfinished_tasks: set[str] | None = None) -> str:
    """pending, running, done or failed as stored, or interrupted: running with no sign of life lately,
    or waiting for a task that is no longer among `unfinished_tasks` (None: not known)."""
    if job.status == JudgeJob.Status.RUNNING and job.updated_at < timezone.now() - _stale_after():
        return INTERRUPTED
    if job_task_gone(job, unfinished_tasks):
        return INTERRUPTED
    return job.status


def job_status_text(job: JudgeJob, state: str | None = None) -> str:
    """The state in words, what went wrong first: the line the Jobs page and the judge command show."""
    state = state or job_state(job)
    if state == INTERRUPTED:
        return (
            f"interrupted: no progress saved since {job.updated_at:%Y-%m-%d %H:%M:%S} UTC (its worker was "
            f"killed or lost); {job.units_done}/{plural(job.units_total, 'unit')} done. Resume it to go on."
        )
    if state == JudgeJob.Status.FAILED:
        return f"failed: {job.error}" if job.error else "failed"
    if state == JudgeJob.Status.DONE and job.units_failed:
        return (
            f"done with failures: {job.error}"
            if job.error
            else f"done, {plural(job.units_failed, 'unit')} failed"
        )
    if state == JudgeJob.Status.DONE and job.error:
        # Nothing failed, but some units were skipped: both counts, so "done" is not read as "all of it".
        return f"done: {plural(job.units_done, 'unit')} judged; {job.error}"
    return state


@dataclass(frozen=True)
class JobRead:
    """A job as pages, the API and commands show it: its row with the totals of its call rows, and its
    state read honestly (`interrupted` when its worker is gone), in a word and in words."""

    job: JudgeJob
    state: str
    status_text: str


def jobs_read(jobs: Iterable[JudgeJob]) -> list[JobRead]:
    """The jobs with their call totals from the rows, and their state, for pages."""
    jobs = list(jobs)
    unfinished = tasks_unfinished([job.task_id for job in jobs if not job.finished])
    # The rows were read before the queue: a task that ended in between saved its job's last progress
    # before its own end was committed, so a job whose task is gone is read again (one query, only then)
    # and is interrupted only if it is still unfinished now.
    gone = [job.pk for job in jobs if job_task_gone(job, unfinished)]
    if gone:
        fresh = JudgeJob.objects.select_related("judge", "collection").in_bulk(gone)
        jobs = [fresh.get(job.pk, job) for job in jobs]
    totals = call_totals(job.pk for job in jobs if not job.is_nli)
    reads = []
    for job in jobs:
        totals_apply(job, totals.get(job.pk))
        state = job_state(job, unfinished)
        reads.append(JobRead(job, state, job_status_text(job, state)))
    return reads
