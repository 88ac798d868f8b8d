"""Uploads as background tasks: a small file is imported before its page answers, a larger one by a task
worker (manage.py task_worker) while the page follows it."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django_tasks import task

from annotation.labels.files import UploadRefused
from console.models import ImportJob
from console.uploads.selectors import import_job_state
from console.uploads.services import import_job_run, imported_inline
from core.background import requeue_on_shutdown
from core.jobs import job_queue


@task()
def import_job_run_task(job_id: int) -> dict[str, object]:
    """Import one stored upload; a job already finished is left as it is, so a task run twice imports
    once. A worker stopped in the middle queues the job again (its file is kept): the import is one
    transaction, so nothing of the stopped run was stored."""
    with requeue_on_shutdown(f"import job {job_id}", lambda: import_job_queue(job=ImportJob(pk=job_id))):
        job = import_job_run(job_id=job_id)
    return {"job": job.pk, "status": job.status}


def import_job_start(*, job: ImportJob) -> bool:
    """Import a small file now; hand a larger one to the task workers. True when it ran here."""
    if imported_inline(job):
        import_job_run(job_id=job.pk)
        job.refresh_from_db()
        return True
    import_job_queue(job=job)
    return False


@transaction.atomic
def import_job_queue(*, job: ImportJob) -> None:
    """Mark the job waiting and enqueue its import, in one transaction with the caller's: the queue lives
    in the same database, so no worker sees the task before the job's row is committed."""
    job_queue(job=job, task=import_job_run_task, percent=0, done=0, total=0, heartbeat_at=None)


def import_job_resumable(*, job: ImportJob) -> bool:
    """Whether an interrupted import can run again: its stored file is still there."""
    return not job.finished and Path(job.stored_path).is_file()


@transaction.atomic
def import_job_resume(*, job: ImportJob) -> None:
    """Queue again an import whose worker died in the middle (the page showed it interrupted).

    Refused when the job finished or its file is gone (upload it again), and while it still shows signs
    of life: two runs of one file would wait on each other's transaction.
    """
    job = ImportJob.objects.select_for_update().get(pk=job.pk)
    if not import_job_state(job=job).interrupted:
        raise UploadRefused(
            f"the import of {job.file_name} is {job.get_status_display().lower()}, not interrupted"
        )
    if not import_job_resumable(job=job):
        raise UploadRefused(f"the stored copy of {job.file_name} is gone: upload the file again")
    import_job_queue(job=job)
