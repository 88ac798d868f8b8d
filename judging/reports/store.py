"""How a page asks for a stored report: `report_for` answers at once with the figures, or with where
their computation stands (and the latest earlier figures of the same choices, to show as such).

A report's fingerprint is the digest of its kind, its code version, the collection, the page's choices
(normalised) and the revisions of the tables it reads (core/revisions.py), read in one query BEFORE
anything is computed: a write committed during the computation changes the next view's fingerprint, so
that view computes again; a figure is never shown as current once a table it read has changed. Revisions
are per table, for every collection at once: a label written in another collection also makes the report
compute again (never stale; sometimes computed needlessly).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from annotation.models import Collection
from core.jobs import FINISHED, job_interrupted
from core.revisions import revisions_read
from judging.reports.models import ReportResult
from judging.reports.tasks import report_queue


class ReportError(Exception):
    """A report asked to do what its state forbids (queue again one that is not failed or interrupted)."""


def _canonical(value: Any) -> str:
    return json.dumps(value, cls=DjangoJSONEncoder, sort_keys=True, separators=(",", ":"))


def _digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


def params_normalise(params: dict[str, Any]) -> dict[str, Any]:
    """The choices as stored and as the compute function reads them back: JSON, keys sorted."""
    return json.loads(_canonical(params))


def _fingerprint(
    *,
    kind: str,
    version: int,
    collection: Collection,
    params: dict[str, Any],
    reads: Iterable[type[models.Model]],
) -> str:
    """The digest of the report, its version, the collection, the normalised choices and the current
    revisions of the tables it reads (one query)."""
    revisions = revisions_read(models=reads)
    return _digest([kind, version, collection.pk, params, sorted(revisions.items())])


@dataclass(frozen=True)
class ReportView:
    """What a page shows of a report: `row` (its figures in `result` once done), and while it is not done,
    `earlier`, the latest done row of the same choices under an older fingerprint (None if none)."""

    row: ReportResult
    earlier: ReportResult | None
    interrupted: bool

    @property
    def done(self) -> bool:
        return self.row.status == ReportResult.Status.DONE

    @property
    def failed(self) -> bool:
        return self.row.status == ReportResult.Status.FAILED

    @property
    def computing(self) -> bool:
        """Waiting or running on a worker that lives: the page refreshes itself."""
        return not self.row.finished and not self.interrupted

    @property
    def result(self) -> dict[str, Any] | None:
        """The current figures, or None while they are computed (or failed)."""
        return self.row.result if self.done else None


def report_shown_row(view: ReportView) -> ReportResult | None:
    """The row whose figures a page draws: the current one, or while it is computed the latest earlier
    one (which `reports/_status.html` labels as such), or None."""
    if view.done:
        return view.row
    return view.earlier


def report_shown(view: ReportView) -> dict[str, Any] | None:
    """The figures a page draws (those of `report_shown_row`), or None."""
    row = report_shown_row(view)
    return row.result if row is not None else None


def report_parts(
    *, report: ReportResult, parts: Mapping[str, str | tuple[str, range]]
) -> dict[str, list[Any]]:
    """Parts of a stored report's figures, read in SQL (one query) so that a page showing a page of a long
    list reads that page, never the whole JSON: each name's jsonpath items as a list (PostgreSQL's
    jsonb_path_query_array; lax mode, so a subscript past an array's end gives fewer items, not an error).
    A part is a jsonpath (`"$.sections[*].rows.size()"`: each section's number of rows) or an array's
    jsonpath and the items of it wanted (`("$.sections[2].rows", range(25, 50))`). Ask
    `report_for(..., deferred=True)` for the row, so that its figures are not read whole beside."""
    paths: dict[str, str] = {}
    for name, part in parts.items():
        if isinstance(part, tuple):
            path, items = part
            if items.step != 1:
                raise ValueError(f"report part {name}: a range of consecutive items, not every {items.step}")
            if not items:
                continue  # nothing asked of it
            part = f"{path}[{items.start} to {items.stop - 1}]"
        paths[name] = part
    if not paths:
        return {name: [] for name in parts}
    # The figures are decompressed once, in the CTE, for every path: a path on the column itself would
    # decompress the whole stored JSON again for each path (`|| '{}'` hands on the decompressed value).
    table = connection.ops.quote_name(ReportResult._meta.db_table)
    sql = (
        f"WITH stored AS MATERIALIZED (SELECT result || '{{}}'::jsonb AS figures FROM {table} WHERE id = %s) "
        f"SELECT {', '.join(['jsonb_path_query_array(figures, %s::jsonpath)'] * len(paths))} FROM stored"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [report.pk, *paths.values()])
        found = cursor.fetchone()
    values = dict(zip(paths, found, strict=True)) if found else {}
    return {name: _json_value(values.get(name)) for name in parts}


def _json_value(value: Any) -> list[Any]:
    """A jsonb the cursor answers, as Python (Django's PostgreSQL cursor hands jsonb on as text)."""
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str | bytes) else value


def report_for(
    *,
    kind: str,
    version: int,
    collection: Collection,
    params: dict[str, Any],
    reads: Iterable[type[models.Model]],
    compute: str,
    deferred: bool = False,
) -> ReportView:
    """The report `kind` (at code `version`: raise it when the figures' computation or shape changes) of
    `params` on the collection, whose compute function (dotted path: a `Compute` of
    judging/reports/tasks.py) reads the tables of the models `reads`.

    The stored row of the current fingerprint is found, or made and queued (once: two views at once find
    the same row). A handful of queries, whatever the data's size. `deferred`: the rows' figures are left
    in the database, for a page that reads only parts of them (`report_parts`).
    """
    params = params_normalise(params)
    # The version is part of the choices' key: figures of an older version (perhaps of another shape) are
    # never shown as the earlier figures of this one.
    params_key = _digest([kind, version, params])
    key = _fingerprint(kind=kind, version=version, collection=collection, params=params, reads=reads)
    rows = ReportResult.objects.defer("result") if deferred else ReportResult.objects.all()
    row = rows.filter(kind=kind, key=key).first()
    if row is None:
        with transaction.atomic():
            row, created = ReportResult.objects.get_or_create(
                kind=kind,
                key=key,
                defaults={
                    "collection": collection,
                    "params": params,
                    "params_key": params_key,
                    "compute": compute,
                },
            )
            if created:
                report_queue(report=row)
        # Read again: a task backend that runs at once has finished it already.
        row = rows.get(pk=row.pk)
    earlier = None
    if row.status != ReportResult.Status.DONE:
        earlier = (
            rows.filter(
                kind=kind, collection=collection, params_key=params_key, status=ReportResult.Status.DONE
            )
            .exclude(pk=row.pk)
            .order_by("-finished_at", "-id")
            .first()
        )
    return ReportView(row=row, earlier=earlier, interrupted=job_interrupted(row))


def report_current(
    *,
    kind: str,
    version: int,
    collection: Collection,
    params: dict[str, Any],
    reads: Iterable[type[models.Model]],
) -> dict[str, Any] | None:
    """The figures of the report stored under the current fingerprint if they are done, else None (nothing
    is queued): what a download serves at once, computing in the request otherwise. Two queries."""
    key = _fingerprint(
        kind=kind, version=version, collection=collection, params=params_normalise(params), reads=reads
    )
    return (
        ReportResult.objects.filter(kind=kind, key=key, status=ReportResult.Status.DONE)
        .values_list("result", flat=True)
        .first()
    )


@transaction.atomic
def report_again(*, report: ReportResult) -> ReportResult:
    """Queue again a report that failed or whose worker died. One that waits, runs or is done is refused;
    the row is locked first, so two clicks queue it once."""
    report = ReportResult.objects.select_for_update().get(pk=report.pk)
    if report.status != ReportResult.Status.FAILED and not job_interrupted(report):
        raise ReportError(
            f"report {report.pk} is {report.get_status_display().lower()}: nothing to try again"
        )
    report_queue(report=report)
    report.refresh_from_db()
    return report


# Finished rows kept per report, collection and choices: the current figures and a few earlier ones.
KEEP_PER_CHOICES = 3


def reports_prune(*, keep: int = KEEP_PER_CHOICES) -> int:
    """Delete the finished rows of each report, collection and choices but the latest `keep`; the number
    deleted. Rows that wait or run are kept."""
    ranked = ReportResult.objects.filter(status__in=FINISHED).annotate(
        rank=Window(
            RowNumber(),
            partition_by=[F("kind"), F("collection_id"), F("params_key")],
            order_by=[F("created_at").desc(), F("id").desc()],
        )
    )
    stale = [row.pk for row in ranked.filter(rank__gt=keep).only("pk")]
    deleted, _ = ReportResult.objects.filter(pk__in=stale).delete()
    return deleted
