"""The nugget score pages' reports: what a task worker computes (JSON) and what the pages draw from it.

Scoring every run reads every nugget assignment of the judge (810,000 at a TREC RAG track's size, over
a second), too long for a request, so the pages validate their form in the request and read the scores
computed here on the worker (judging/reports). The rank order is the page's own choice: one stored
evaluation serves all four. The collection's table keeps each run's means and counts, not its answers;
the run page's report adds that run's answers. Their fingerprint covers the nugget lists, their topics,
the assignments and vital/okay labels, the runs and their answers, and the judges (`NUGGET_READS`).
"""

from __future__ import annotations

from typing import Any

from annotation.models import (
    Collection,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetImportanceJudgment,
    NuggetSetTurn,
    Response,
    Run,
    Topic,
    Turn,
)
from judging.measures.rag_nuggets import NuggetScores
from judging.rag_nuggets.selectors import ScoreTable, run_topic_counts, score_table
from judging.reports.tasks import Progress
from judging.scores.rag_nuggets import nugget_scores

# The report kinds of the two pages, and the version of their figures' shape and computation.
NUGGET_SCORES = "nugget-scores"
NUGGET_SCORES_RUN = "nugget-scores-run"
VERSION = 1

# The tables the scores are read from: a write to any of them makes the next view compute again.
NUGGET_READS = (
    Judge,
    Topic,
    Turn,
    Run,
    Response,
    Nugget,
    NuggetSetTurn,
    NuggetAssignment,
    NuggetImportanceJudgment,
)

JUDGE_CHOICES = ("judge", "importance_judge", "nuggets_judge")


class NuggetReportError(ValueError):
    """A judge the choices name is gone since they were asked."""


def nugget_params(data: dict[str, Any], *, run: str | None = None) -> dict[str, Any]:
    """The nugget score form's cleaned data as a report's JSON choices, the rank order left out: judges
    by name (None for the defaults), answered-only, and the run of the per-topic page."""
    params: dict[str, Any] = {k: data[k].name if data.get(k) else None for k in JUDGE_CHOICES}
    params["answered_only"] = bool(data["answered_only"])
    if run is not None:
        params["run"] = run
    return params


def _scores(collection: Collection, params: dict[str, Any]) -> NuggetScores:
    names = [params[k] for k in JUDGE_CHOICES if params.get(k)]
    judges = Judge.objects.in_bulk(names, field_name="name")
    missing = [n for n in names if n not in judges]
    if missing:
        raise NuggetReportError(f"judge {', '.join(missing)} no longer exists")
    return nugget_scores(
        collection=collection,
        judge=judges[params["judge"]],
        importance_judge=judges.get(params["importance_judge"] or ""),
        nuggets_judge=judges.get(params["nuggets_judge"] or ""),
        answered_only=params["answered_only"],
    )


def nugget_scores_compute(
    *, collection: Collection, params: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """Every run's four scores and its topics scored and answered; the answers left out. A judge gone
    since the choices were made is `{"error": why}`."""
    try:
        scores = _scores(collection, params)
    except NuggetReportError as exc:
        return {"error": str(exc)}
    return {"scores": {**scores, "answers": []}, "topics": run_topic_counts(scores)}


def nugget_scores_run_compute(
    *, collection: Collection, params: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """The table of `nugget_scores_compute` and the answers of the chosen run, topic by topic."""
    try:
        scores = _scores(collection, params)
    except NuggetReportError as exc:
        return {"error": str(exc)}
    answers = [a for a in scores["answers"] if a["run_id"] == params["run"]]
    return {"scores": {**scores, "answers": answers}, "topics": run_topic_counts(scores)}


def stored_table(stored: dict[str, Any] | None, *, order: str) -> ScoreTable | None:
    """The table a report stored, ranked by `order`; None without figures or with an error."""
    if stored is None or "scores" not in stored:
        return None
    topics = {run: (pair[0], pair[1]) for run, pair in stored["topics"].items()}
    return score_table(scores=stored["scores"], topics=topics, order=order)
