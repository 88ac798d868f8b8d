"""Celery tasks of the judging app: judge jobs run on workers when CELERY_BROKER_URL is set, eagerly otherwise."""

from __future__ import annotations

from celery import shared_task

from judging.jobs import judge_job_run
from judging.models import JudgeJob


@shared_task(name="judging.judge_job_run", acks_late=True)
def judge_job_run_task(job_id: int) -> dict[str, object]:
    """Run or resume one job; acks_late so a job whose worker dies is delivered again and resumes from the cache."""
    job = JudgeJob.objects.select_related("judge", "collection").get(pk=job_id)
    judge_job_run(job=job)
    return {"job": job.pk, "status": job.status, "calls_made": job.calls_made, "cache_hits": job.cache_hits}
