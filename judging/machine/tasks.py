"""Judge jobs as background tasks: a page (or `judge --queue`) queues a job, a task worker runs it."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django_tasks import task

from core.background import requeue_on_shutdown, tasks_unfinished
from core.jobs import job_queue
from judging.clients.llm import LlmError
from judging.clients.nli import NliError
from judging.machine.jobs import JobError, judge_job_run
from judging.machine.jobs.state import INTERRUPTED, job_state, jobs_read
from judging.machine.nli import NliJobError
from judging.models import JudgeJob


@task()
def judge_job_run_task(job_id: int) -> dict[str, object]:
    """Run or resume one job, LLM or NLI, on a task worker.

    A job that cannot run as asked (its model does not load, a judge it names is gone) has its status and
    error saved on the job, where the Jobs page shows them; the task then ends instead of raising, so the
    worker goes on with the next. A worker stopped in the middle queues the job again for the next one.
    """
    job = JudgeJob.objects.select_related("judge", "collection").get(pk=job_id)
    with requeue_on_shutdown(
        f"judge job {job_id}", lambda: judge_job_queue(job=job, replacing_its_task=True)
    ):
        try:
            judge_job_run(job=job)
        except (JobError, LlmError, NliError, NliJobError) as exc:
            job.refresh_from_db()
            if job.status != JudgeJob.Status.FAILED:  # it failed before it started: say so on the job
                job.status, job.error = JudgeJob.Status.FAILED, f"{type(exc).__name__}: {exc}"
                job.save(update_fields=["status", "error", "updated_at"])
    return {"job": job.pk, "status": job.status, "calls_made": job.calls_made, "cache_hits": job.cache_hits}


@transaction.atomic
def judge_job_queue(*, job: JudgeJob, replacing_its_task: bool = False) -> JudgeJob:
    """Hand a job to the task workers: mark it pending and enqueue its task, in one transaction.

    The queue lives in the same database, so a worker sees the task only once the job's row (and a
    caller's own transaction around this, such as the job's creation) is committed. The job is marked
    pending first, so whoever watches it (the Jobs page, the judge command) sees a resumed job as waiting
    for a worker, not as the failed or killed run it was before. A job that already waits for its task,
    or runs on a live worker (the same work started again), is left to it: two runs of one job would
    judge its units twice; only the task itself, stopping, queues its job again (`replacing_its_task`).
    A task the job had before, left "running" by a worker that died, is marked failed.
    """
    job = JudgeJob.objects.select_for_update().get(pk=job.pk)
    unfinished = tasks_unfinished([job.task_id])
    live = job.task_id and unfinished and job_state(job, unfinished) != INTERRUPTED
    if live and not replacing_its_task:
        return job
    job_queue(job=job, task=judge_job_run_task, error="", updated_at=timezone.now())
    job.refresh_from_db()
    return job


@transaction.atomic
def judge_job_resume(*, job: JudgeJob) -> JudgeJob:
    """Queue again a job that stopped before its end: interrupted (its worker died) or failed.

    A job that waits, runs or is done is refused: resuming it would run the same units twice at once.
    The row is locked first, so two clicks queue it once.
    """
    (read,) = jobs_read([JudgeJob.objects.select_for_update().get(pk=job.pk)])
    if read.state not in (INTERRUPTED, JudgeJob.Status.FAILED):
        raise JobError(f"job {job.pk} is {read.state}: only an interrupted or failed job resumes")
    return judge_job_queue(job=read.job)
