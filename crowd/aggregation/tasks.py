"""Aggregation of nugget-support campaigns as background tasks: the campaign page's button records a job
and a task worker (manage.py task_worker) fits and writes it while the page shows how it stands.

Every aggregation goes to a worker, however small the campaign: its time is the models' (MACE's ten
restarts take seconds on twenty answers), not the campaign's size, so no size makes it safe in a request.
"""

from __future__ import annotations

from django.db import transaction
from django_tasks import task

from core.background import requeue_on_shutdown, task_abandon
from core.jobs import job_end, job_queue
from crowd.aggregation.selectors import METHODS, fit_job_state
from crowd.aggregation.services import fit_job_run
from crowd.errors import CrowdError
from crowd.models import CrowdCampaign, CrowdFitJob


@task()
def fit_job_run_task(job_id: int) -> dict[str, object]:
    """Run one aggregation job. A worker stopped in the middle queues it again: the labels are written in
    one transaction and the write is idempotent, so the next run finishes the same work."""
    with requeue_on_shutdown(f"crowd fit job {job_id}", lambda: fit_job_queue(job=CrowdFitJob(pk=job_id))):
        job = fit_job_run(job_id=job_id)
    return {"job": job.pk, "status": job.status}


@transaction.atomic
def fit_job_start(*, campaign: CrowdCampaign, method: str, min_votes: int) -> CrowdFitJob:
    """Record an aggregation of `campaign` by `method` and queue it. Refused while another of the
    campaign's aggregations waits or runs (two would write the same labels at once); one whose worker
    died is marked failed and a new one starts."""
    if campaign.kind != CrowdCampaign.Kind.NUGGET_SUPPORT:
        raise CrowdError(f"campaign {campaign.name} asks yes/no questions: aggregate it by majority vote")
    if method not in METHODS:
        raise CrowdError(f"method {method!r} is not one of {', '.join(METHODS)}")
    CrowdCampaign.objects.select_for_update().filter(pk=campaign.pk).first()
    state = fit_job_state(campaign=campaign)
    if state is not None and not state.job.finished:
        if not state.interrupted:
            raise CrowdError(
                f"an aggregation by {state.job.method} is {state.job.get_status_display().lower()}: "
                "wait for it to finish"
            )
        task_abandon(state.job.task_id)
        job_end(job=state.job, status=CrowdFitJob.Status.FAILED, message="interrupted: its worker stopped")
    job = CrowdFitJob.objects.create(campaign=campaign, method=method, min_votes=min_votes)
    fit_job_queue(job=job)
    job.refresh_from_db()
    return job


@transaction.atomic
def fit_job_queue(*, job: CrowdFitJob) -> None:
    """Mark the job waiting and enqueue it in the caller's transaction: the queue lives in the same
    database, so no worker sees the task before the job's row is committed."""
    job_queue(job=job, task=fit_job_run_task)
