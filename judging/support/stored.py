"""The support leaderboard and the disagreement study's report as stored reports (judging/reports): what
they read, their code versions, and the functions a task worker runs to compute them. The pages ask
`judging.reports.store.report_for` with these and draw their tables from the JSON returned; the study's
`?format=json` serves the stored figures when current, else computes them in the request (never stale).

The choices are judges by primary key, looked up again here; a judge deleted meanwhile is an
{"error": ...} result the page shows.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import models

from annotation.models import Collection, Condition, Judge
from annotation.selectors import collection_tables
from judging.measures.support import compare_judges, leaderboard, mean_sentences_per_answer
from judging.scores.support import support_disagreement_report, support_scores

# Raise a report's version whenever its figures or their shape change: rows of an older version are then
# never found again.
LEADERBOARD = ("support-leaderboard", 1)
DISAGREEMENTS = ("support-disagreements", 1)


@functools.cache
def support_reads() -> tuple[type[models.Model], ...]:
    """The tables these reports may read: every table of the collection and its labels, all but the
    assessors' leases and pauses, which hold no label."""
    return collection_tables()


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def leaderboard_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """{"rows": [{rank, run, weighted_precision, weighted_recall, topics, mean_sentences}],
    "mean_sentences", "correlation": {measure: {runs, kendall_tau, spearman_rho}} or None} of the runs
    under judge `params["judge"]` (pk), compared with `params["compare"]` (pk or None)."""
    found = Judge.objects.in_bulk([pk for pk in (params["judge"], params["compare"]) if pk is not None])
    judge = found.get(params["judge"])
    if judge is None:
        return {"error": "the judge was deleted", "rows": [], "mean_sentences": 0.0, "correlation": None}
    scores = support_scores(collection=collection, judge=judge)
    progress(1, 2, "judges")
    compare = found.get(params["compare"]) if params["compare"] is not None else None
    correlation = None
    if compare is not None and compare != judge:
        correlation = compare_judges(scores, support_scores(collection=collection, judge=compare))
    progress(2, 2, "judges")
    rows = [
        {
            "rank": row.rank,
            "run": row.run,
            "weighted_precision": row.weighted_precision,
            "weighted_recall": row.weighted_recall,
            "topics": row.topics,
            "mean_sentences": row.mean_sentences,
        }
        for row in leaderboard(scores, by=params["by"])
    ]
    return {
        "error": None,
        "rows": rows,
        "mean_sentences": mean_sentences_per_answer(scores),
        "correlation": correlation,
    }


def disagreements_params(*, human: list[Judge], llm: Judge, blind: Judge) -> dict[str, Any]:
    return {"human": sorted(j.pk for j in human), "llm": llm.pk, "blind": blind.pk}


def disagreements_compute(
    *, collection: Collection, params: dict[str, Any], progress: Any = _noop
) -> dict[str, Any]:
    """{"reports": {condition: DisagreementReport.as_dict()}, "rows": [the page's rows]} of the study
    with the judges of `params` (pks)."""
    found = Judge.objects.in_bulk([*params["human"], params["llm"], params["blind"]])
    if any(pk not in found for pk in (*params["human"], params["llm"], params["blind"])):
        return {"error": "a judge of the study was deleted", "reports": {}, "rows": []}
    reports = support_disagreement_report(
        collection=collection,
        human_judges=[found[pk] for pk in params["human"]],
        machine_judge=found[params["llm"]],
        blind_judge=found[params["blind"]],
    )
    progress(1, 1, "reports")
    titles = dict(Condition.choices) | {"all": "All conditions"}
    return {
        "error": None,
        "reports": {c: r.as_dict() for c, r in reports.items()},
        "rows": [
            {"condition": c, "title": titles[c], "neither": r.neither, **r.as_dict()}
            for c, r in reports.items()
        ],
    }
