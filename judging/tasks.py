"""Celery tasks of the judging app: judge jobs run on workers when CELERY_BROKER_URL is set; without a
broker a job started from a page runs in a background thread of the web process, never in the request."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from assay.background import thread_start, threads_join
from judging.clients.llm import LlmError
from judging.clients.nli import NliError
from judging.machine.jobs import JobError, judge_job_run
from judging.machine.nli import NliJobError
from judging.models import JudgeJob

logger = logging.getLogger(__name__)
# Threads running jobs in this process (no broker): tests and a graceful shutdown can wait for them.


@shared_task(name="judging.judge_job_run", acks_late=True)
def judge_job_run_task(job_id: int) -> dict[str, object]:
    """Run or resume one job, LLM or NLI; acks_late so a job whose worker dies is delivered again and
    resumes from what is stored.

    A job that cannot run as asked (its model does not load, a judge it names is gone) has its status and
    error saved on the job, where the Jobs page shows them; the task then ends instead of raising, so a
    worker (or the thread running it) does not fail with it.
    """
    job = JudgeJob.objects.select_related("judge", "collection").get(pk=job_id)
    try:
        judge_job_run(job=job)
    except (JobError, LlmError, NliError, NliJobError) as exc:
        job.refresh_from_db()
        if job.status != JudgeJob.Status.FAILED:  # it failed before it started: say so on the job
            job.status, job.error = JudgeJob.Status.FAILED, f"{type(exc).__name__}: {exc}"
            job.save(update_fields=["status", "error", "updated_at"])
    return {"job": job.pk, "status": job.status, "calls_made": job.calls_made, "cache_hits": job.cache_hits}


def _mark_pending(job: JudgeJob) -> None:
    JudgeJob.objects.filter(pk=job.pk).update(
        status=JudgeJob.Status.PENDING, error="", updated_at=timezone.now()
    )
    job.status, job.error = JudgeJob.Status.PENDING, ""


def judge_job_enqueue(*, job: JudgeJob) -> None:
    """Hand a job to the Celery workers (run here, to its end, when no broker is set: the judge command).

    Call it once the job's row is committed, or a worker may look for it too early (a page view wraps
    the call in transaction.on_commit). The job is marked pending first, so whoever watches it (the judge
    command, the Jobs page) sees a resumed job as waiting for a worker, not as the failed or killed run
    it was before.
    """
    _mark_pending(job)
    judge_job_run_task.delay(job.pk)


def judge_job_start_background(*, job: JudgeJob) -> threading.Thread | None:
    """Start a job without waiting for it: to the workers with a broker, else in a thread of this process.

    A page calls this, so the request returns at once whatever the job's size. A thread lives as long as
    the web process: if that process is restarted the job shows as interrupted and resumes when started
    again; deployments that restart workers often should configure a broker.
    """
    if settings.CELERY_BROKER_URL:
        judge_job_enqueue(job=job)
        return None
    _mark_pending(job)
    job_id = job.pk
    return thread_start(name=f"judge-job-{job_id}", target=lambda: judge_job_run_task(job_id))


def background_jobs_join(timeout: float | None = None) -> None:
    """Wait for the jobs this process runs in threads (tests; a shutdown that lets them finish)."""
    threads_join(timeout)
