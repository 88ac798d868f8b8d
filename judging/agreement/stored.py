"""The agreement reports as stored reports (judging/reports): what each reads, its code version, and the
functions a task worker runs to compute it. The pages ask `judging.reports.store.report_for` with these and
show the JSON they return; the downloads serve the stored figures when they are current, or compute them
in the request (`*_compute` with no progress) when they are not, so a download is never stale either.

Each compute function takes the page's choices as JSON (judges by primary key), looks them up again and
returns the dict the page and the downloads are built from; a choice with nothing to compare is a result
({"error": ...}) the page shows as it did, not a failure.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import models

from annotation.models import Collection, Judge
from annotation.selectors import collection_tables
from judging.agreement.reports import campaign_report, comparison_report, measures_for_task, rank_report
from judging.measures.agreement import AgreementUndefined

# Raise a report's version whenever its figures or their shape change: rows of an older version are
# then never found again.
COMPARISON = ("agreement-comparison", 1)
RANKING = ("agreement-ranking", 1)
CAMPAIGN = ("agreement-campaign", 2)


@functools.cache
def agreement_reads() -> tuple[type[models.Model], ...]:
    """The tables an agreement report may read: every table of the collection and its labels (the label
    tables of every family, turns, topics, passages, runs, rankings, responses, judges, nuggets, gold), all
    but the assessors' leases and pauses, which hold no label."""
    return collection_tables()


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def _judges(*pks: int | None) -> list[Judge | None]:
    found = Judge.objects.in_bulk([pk for pk in pks if pk is not None])
    return [found.get(pk) if pk is not None else None for pk in pks]


def _ranking(collection: Collection, params: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    judge_a, judge_b, importance = _judges(params["a"], params["b"], params.get("importance_judge"))
    if judge_a is None or judge_b is None:
        return None, "a judge compared here was deleted"
    try:
        report = rank_report(
            collection=collection,
            measure=params["measure"],
            judge_a=judge_a,
            judge_b=judge_b,
            importance_judge=importance,
        )
    except ValueError as exc:
        return None, str(exc)
    if report["n_runs"] == 0:
        return None, f"no run has a {params['measure']} score under both {judge_a.name} and {judge_b.name}"
    return report, ""


def ranking_params(data: dict[str, Any]) -> dict[str, Any]:
    """The ranking's choices from RankingForm's cleaned data, as stored."""
    importance = data.get("importance_judge")
    return {
        "measure": data["measure"],
        "a": data["a"].pk,
        "b": data["b"].pk,
        "importance_judge": importance.pk if importance is not None else None,
    }


def ranking_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """The run ranking under two judges: {"report": ..., "error": ...}."""
    progress(0, 1, "rankings")
    report, error = _ranking(collection, params)
    progress(1, 1, "rankings")
    return {"report": report, "error": error}


def comparison_params(data: dict[str, Any]) -> dict[str, Any]:
    """The comparison's choices from ComparisonForm's cleaned data, as stored."""
    return {
        "task": data["task"],
        "a": data["a"].pk,
        "b": data["b"].pk,
        "topics": list(data["topics"] or []),
        "condition": data["condition"] or None,
        "threshold": data["threshold"],
    }


def comparison_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """One comparison of two judges, and beside it the run ranking under the same two judges by the task's
    first run measure (None when the task has none or no run is scored under both):
    {"report": ..., "error": ..., "ranking": {"report": ..., "measure": ...} | None}."""
    judge_a, judge_b = _judges(params["a"], params["b"])
    if judge_a is None or judge_b is None:
        return {"report": None, "error": "a judge compared here was deleted", "ranking": None}
    progress(0, 2, "reports")
    try:
        report = comparison_report(
            collection=collection,
            task=params["task"],
            judge_a=judge_a,
            judge_b=judge_b,
            topics=params["topics"] or None,
            condition=params["condition"],
            binary_threshold=params["threshold"],
        )
    except (AgreementUndefined, ValueError) as exc:
        return {"report": None, "error": str(exc), "ranking": None}
    progress(1, 2, "reports")
    ranking = None
    measures = measures_for_task(params["task"])
    if measures:
        beside, _error = _ranking(
            collection, {"measure": measures[0], "a": judge_a.pk, "b": judge_b.pk, "importance_judge": None}
        )
        if beside is not None:
            ranking = {"report": beside, "measure": measures[0]}
    progress(2, 2, "reports")
    return {"report": report, "error": "", "ranking": ranking}


def campaign_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """Agreement of every pair of judges on every task of the collection."""
    return campaign_report(collection=collection, progress=progress)
