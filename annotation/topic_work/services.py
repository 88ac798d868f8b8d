"""Writes on a piece of topic work that are the same whatever its kind: its clock and its completion.

What may be handed out, and to whom, is each family's rule (annotation.support, annotation.rag_nuggets);
they create the rows and call these as an assessor works.
"""

from __future__ import annotations

from typing import Any

from django.db.models import BigIntegerField, F
from django.db.models.functions import Cast, Least
from django.utils import timezone

from annotation.labels.writer import TIME_SPENT_MAX_MS
from annotation.topic_work.models import TopicWork

# One page's clock is capped: a tab left open overnight is not a night of judging.
MAX_PAGE_TIME_MS = 3600 * 1000


def topic_work_start(*, work: TopicWork) -> None:
    """Start the work's clock when its first page is opened (the time per topic starts there)."""
    if work.started_at is None:
        work.started_at = timezone.now()
        TopicWork.objects.filter(pk=work.pk, started_at__isnull=True).update(started_at=work.started_at)


def topic_work_clock(*, work: TopicWork, time_spent_ms: int | None, finish: bool = False) -> None:
    """Add a page's time to the work (and start its clock); finish it if asked. One UPDATE."""
    now = timezone.now()
    spent = min(max(time_spent_ms or 0, 0), MAX_PAGE_TIME_MS)
    # Summed as bigint, then held to the integer column (annotation.labels.writer.TIME_SPENT_MAX_MS).
    total = Least(Cast(F("time_spent_ms"), BigIntegerField()) + spent, TIME_SPENT_MAX_MS)
    changes: dict[str, Any] = {"time_spent_ms": total}
    if work.started_at is None:
        changes["started_at"] = work.started_at = now
    if finish and work.completed_at is None:
        changes["completed_at"] = work.completed_at = now
    TopicWork.objects.filter(pk=work.pk).update(**changes)
    work.time_spent_ms = min(work.time_spent_ms + spent, TIME_SPENT_MAX_MS)
