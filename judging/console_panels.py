"""What judging shows on annotation's pages (the organiser's home, a collection's dashboard): its judge
jobs, the live agreement page and the nugget score and calibration pages, registered in core.registry at
start-up because annotation imports nothing from this app."""

from __future__ import annotations

from django.urls import reverse

from core.registry import COLLECTION_LINKS, JOB_LISTERS, JobLine, Link
from judging.models import JudgeJob


def judge_job_lines(collection_id: int | None, limit: int) -> list[JobLine]:
    jobs = JudgeJob.objects.select_related("judge", "collection")
    if collection_id is not None:
        jobs = jobs.filter(collection_id=collection_id)
    return [
        JobLine(
            label=f"judge job {job.pk}",
            url=reverse("judging:job-detail", args=[job.pk]),
            collection=job.collection.name,
            what=f"{job.get_task_display()} · {job.judge.name}",
            status=job.get_status_display() + (f" ({job.units_failed} failed)" if job.units_failed else ""),
            progress=f"{job.units_done} / {job.units_total}",
        )
        for job in jobs[:limit]
    ]


def live_agreement_link(collection_name: str) -> Link:
    return Link(
        label="Live agreement",
        url=reverse("judging:agreement-live", args=[collection_name]),
        id="live-agreement",
    )


def nugget_scores_link(collection_name: str) -> Link:
    return Link(
        label="Nugget scores",
        url=reverse("judging:nugget-scores", args=[collection_name]),
        id="nugget-scores",
    )


def nugget_calibration_link(collection_name: str) -> Link:
    return Link(
        label="Nugget calibration",
        url=reverse("judging:nugget-calibration", args=[collection_name]),
        id="nugget-calibration",
    )


def quality_link(collection_name: str) -> Link:
    return Link(
        label="Assessor quality",
        url=reverse("judging:quality-dashboard", args=[collection_name]),
        id="quality-dashboard",
    )


def register() -> None:
    JOB_LISTERS.register(judge_job_lines)
    COLLECTION_LINKS.register(live_agreement_link)
    COLLECTION_LINKS.register(nugget_scores_link)
    COLLECTION_LINKS.register(nugget_calibration_link)
    COLLECTION_LINKS.register(quality_link)
