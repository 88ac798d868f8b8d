"""The live agreement's figures as a stored report (judging/reports), so the page's poll every few seconds
reads stored JSON rather than every label of the task: the latest figures at once (marked "current":
false while newer labels are being computed), the new ones a poll or two later. A poll reads one page of
the assessors (most labels first) from the stored JSON in SQL, so that its answer and its cost stay the
same however many assessors label."""

from __future__ import annotations

from typing import Any

from annotation.models import Collection
from judging.agreement.reports import live_agreement
from judging.agreement.stored import agreement_reads
from judging.reports.store import ReportView, report_for, report_parts, report_shown_row

# Raise the version whenever the figures or their shape change.
LIVE = ("agreement-live", 2)
ASSESSORS_PER_PAGE = 20


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def live_compute(*, collection: Collection, params: dict[str, Any], progress: Any = _noop) -> dict[str, Any]:
    """`live_agreement` of the task `params["task"]`."""
    return live_agreement(collection=collection, task=params["task"])


def live_stored(*, collection: Collection, task: str) -> ReportView:
    """The stored live report of the task, its figures left in the database (`live_page` reads a page)."""
    kind, version = LIVE
    return report_for(
        kind=kind,
        version=version,
        collection=collection,
        params={"task": task},
        reads=agreement_reads(),
        compute="judging.agreement.live.live_compute",
        deferred=True,
    )


def live_page(*, view: ReportView, page: int) -> dict[str, Any] | None:
    """Page `page` (from 1) of the figures shown, in one query: {"collection", "task", "llm_judges",
    "updated_at", "assessors": that page's, "total": the assessors, "page", "pages", "per_page",
    "current": false for the earlier figures shown while newer ones are computed}; None before any are.
    A page past the last has no assessors (the total says where the last is)."""
    row = report_shown_row(view)
    if row is None:
        return None
    start = (page - 1) * ASSESSORS_PER_PAGE
    parts = report_parts(
        report=row,
        parts={
            "collection": "$.collection",
            "task": "$.task",
            "llm_judges": "$.llm_judges[*]",
            "updated_at": "$.updated_at",
            "total": "$.assessors.size()",
            "assessors": ("$.assessors", range(start, start + ASSESSORS_PER_PAGE)),
        },
    )
    total = next(iter(parts["total"]), 0)
    return {
        "collection": next(iter(parts["collection"]), ""),
        "task": next(iter(parts["task"]), ""),
        "llm_judges": parts["llm_judges"],
        "updated_at": next(iter(parts["updated_at"]), None),
        "assessors": parts["assessors"],
        "total": total,
        "page": page,
        "pages": -(-total // ASSESSORS_PER_PAGE),
        "per_page": ASSESSORS_PER_PAGE,
        "current": view.done,
    }
