"""Celery tasks of the judging app: judge jobs run on workers when CELERY_BROKER_URL is set, eagerly otherwise."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from judging.clients.llm import LlmError
from judging.clients.nli import NliError
from judging.jobs import JobError, judge_job_run
from judging.models import JudgeJob
from judging.nli import NliJobError


@shared_task(name="judging.judge_job_run", acks_late=True)
def judge_job_run_task(job_id: int) -> dict[str, object]:
    """Run or resume one job, LLM or NLI; acks_late so a job whose worker dies is delivered again and
    resumes from what is stored.

    A job that cannot run as asked (its model does not load, a judge it names is gone) has its status and
    error saved on the job, where the Jobs page shows them; the task then ends instead of raising, so an
    eager run inside a page request does not turn into a server error.
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


def judge_job_enqueue(*, job: JudgeJob) -> None:
    """Hand a job to the Celery workers (eagerly run here when no broker is set).

    Call it once the job's row is committed, or a worker may look for it too early (a page view wraps
    the call in transaction.on_commit). The job is marked pending first, so whoever watches it (the judge
    command, the Jobs page) sees a resumed job as waiting for a worker, not as the failed or killed run
    it was before.
    """
    JudgeJob.objects.filter(pk=job.pk).update(
        status=JudgeJob.Status.PENDING, error="", updated_at=timezone.now()
    )
    job.status, job.error = JudgeJob.Status.PENDING, ""
    judge_job_run_task.delay(job.pk)
