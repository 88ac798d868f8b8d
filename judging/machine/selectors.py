"""Reads of the machine-judge jobs for pages outside their own (the organiser's home and dashboard)."""

from __future__ import annotations

from django.db.models import QuerySet

from judging.models import JudgeJob


def judge_jobs_recent(*, collection_id: int | None, limit: int) -> QuerySet[JudgeJob]:
    """The newest judge jobs of one collection (its id), or of all with None, with their judges."""
    jobs = JudgeJob.objects.select_related("judge", "collection")
    if collection_id is not None:
        jobs = jobs.filter(collection_id=collection_id)
    return jobs[:limit]
