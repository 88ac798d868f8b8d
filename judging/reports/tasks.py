"""Stored reports as background tasks: the page records the report it needs and a task worker computes
it (`report_compute_task`), reporting its progress on the row as it goes."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Protocol

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks import task

from annotation.models import Collection
from core.background import requeue_on_shutdown
from core.jobs import job_end, job_queue, job_start
from judging.reports.models import ReportResult

log = logging.getLogger(__name__)

# A compute function reports its progress often; the row is written at most this often (and at the end).
PROGRESS_EVERY_S = 0.5


class Progress(Protocol):
    """How a compute function says how far it got: `progress(done, total, "topics")`."""

    def __call__(self, done: int, total: int, word: str = "") -> None: ...


class Compute(Protocol):
    """A report's compute function: the JSON-able figures of `params` on the collection."""

    def __call__(
        self, *, collection: Collection, params: dict[str, Any], progress: Progress
    ) -> dict[str, Any]: ...


class _RowProgress:
    """Writes a computation's progress on its row, at most every PROGRESS_EVERY_S seconds."""

    def __init__(self, report: ReportResult) -> None:
        self.rows = ReportResult.objects.filter(pk=report.pk)
        self.last = 0.0

    def __call__(self, done: int, total: int, word: str = "") -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and done < total:
            return
        self.last = now
        self.rows.update(
            progress_done=max(0, done),
            progress_total=max(0, total),
            progress_word=word[:100],
            updated_at=timezone.now(),
        )


def _json(result: dict[str, Any]) -> dict[str, Any]:
    """The figures as they will be read back: JSON (tuples become lists, keys strings), so the page built
    from a stored result is the page built from a fresh one. NaN and infinities are refused (PostgreSQL's
    JSON has none): a report says "undefined" in its own words."""
    if not isinstance(result, dict):
        raise TypeError(f"a report's compute function returns a dict, not {type(result).__name__}")
    return json.loads(json.dumps(result, cls=DjangoJSONEncoder, allow_nan=False))


@task()
def report_compute_task(report_id: int) -> dict[str, object]:
    """Compute one report. A worker stopped in the middle queues it again: nothing is written but the
    progress before the end, so the next worker computes the same figures from the start."""
    with requeue_on_shutdown(f"report {report_id}", lambda: report_queue(report=ReportResult(pk=report_id))):
        report = report_run(report_id=report_id)
    return {"report": report.pk, "status": report.status}


def report_run(*, report_id: int) -> ReportResult:
    """Compute and store the figures (or why it failed) on the row. One already finished is left as it
    is, so a task delivered twice computes once."""
    report = ReportResult.objects.select_related("collection").get(pk=report_id)
    if report.finished:
        return report
    job_start(job=report, progress_done=0, progress_total=0, progress_word="", error="")
    status, result, error = ReportResult.Status.DONE, None, ""
    try:
        compute: Compute = import_string(report.compute)
        result = _json(
            compute(collection=report.collection, params=report.params, progress=_RowProgress(report))
        )
    except Exception as exc:  # recorded on the row so the page can say it
        log.exception("report %s (%s) failed", report.pk, report.kind)
        status, error = ReportResult.Status.FAILED, f"{type(exc).__name__}: {exc}"
    job_end(job=report, status=status, result=result, error=error)
    report.refresh_from_db()
    return report


@transaction.atomic
def report_queue(*, report: ReportResult) -> None:
    """Mark the report waiting and enqueue its computation in the caller's transaction."""
    job_queue(
        job=report,
        task=report_compute_task,
        result=None,
        error="",
        progress_done=0,
        progress_total=0,
        progress_word="",
        started_at=None,
        finished_at=None,
    )
