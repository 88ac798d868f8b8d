"""Celery tasks of the annotation app: uploaded files imported on a worker when CELERY_BROKER_URL is set."""

from __future__ import annotations

from celery import shared_task

from annotation.console.uploads import import_job_run


@shared_task(name="annotation.import_job_run", acks_late=True)
def import_job_run_task(job_id: int) -> dict[str, object]:
    """Import one stored upload; a job delivered again after it finished is left as it is."""
    job = import_job_run(job_id=job_id)
    return {"job": job.pk, "status": job.status}
