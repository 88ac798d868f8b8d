"""The quality dashboard's figures as a stored report (judging/reports): what it reads, its code version,
and the function a task worker runs to compute it. The page asks `judging.reports.store.report_for` with
these and rebuilds its rows from the JSON returned.

Whether an assessor is paused is not part of the figures: the page reads it at each view (one query), so
pausing or resuming from the dashboard shows at once and computes nothing again.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from datetime import date
from typing import Any

from django.db import models

from annotation.models import Collection, Judge
from annotation.selectors import collection_tables
from judging.quality.selectors import AssessorQuality, DriftBin, QualitySettings, Rate, collection_quality

# Raise the version whenever the figures or their shape change: rows of an older version are then never
# found again.
QUALITY = ("quality-dashboard", 1)
RATES = ("gold_exact", "gold_within_one", "gold_binary", "agreement", "adjudicated")


@functools.cache
def quality_reads() -> tuple[type[models.Model], ...]:
    """Every table of the collection and its labels but the assessors' leases and pauses."""
    return collection_tables()


def quality_params(*, settings: QualitySettings, adjudicated: Judge | None) -> dict[str, Any]:
    return {"settings": dataclasses.asdict(settings), "adjudicated": adjudicated.pk if adjudicated else None}


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def quality_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """{"assessors": [AssessorQuality as a dict, but `paused`]} of the collection under the bars of
    `params["settings"]`, against the judge `params["adjudicated"]` (pk or None)."""
    adjudicated = None
    if params["adjudicated"] is not None:
        adjudicated = Judge.objects.filter(pk=params["adjudicated"]).first()
        if adjudicated is None:
            return {"error": "the adjudicated judge was deleted", "assessors": []}
    assessors = collection_quality(
        collection=collection, settings=QualitySettings(**params["settings"]), adjudicated=adjudicated
    )
    progress(1, 1, "assessors")
    return {"error": None, "assessors": [dataclasses.asdict(a) for a in assessors]}


def _bin(row: dict[str, Any]) -> DriftBin:
    key = row["key"]
    return DriftBin(
        key=date.fromisoformat(key) if isinstance(key, str) else key,
        gold=Rate(**row["gold"]),
        coassessors=Rate(**row["coassessors"]),
    )


def quality_rows(stored: Iterable[dict[str, Any]], *, paused: set[int]) -> list[AssessorQuality]:
    """The page's rows from a stored result's assessors (those of one page of it), each paused or not as
    `paused` (user pks) says now."""
    rows = []
    for row in stored:
        values = {
            **row,
            **{name: Rate(**row[name]) for name in RATES},
            "by_day": [_bin(b) for b in row["by_day"]],
            "by_run": [_bin(b) for b in row["by_run"]],
            "paused": row["user_pk"] in paused,
        }
        rows.append(AssessorQuality(**values))
    return rows
