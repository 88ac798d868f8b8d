"""The run-evaluation pages' reports: what a task worker computes (JSON) and what the pages draw from it.

Scoring every run with ir_measures grows with runs x turns x ranking depth, too long for a request at a
TREC track's size, so the pages validate their form in the request and read the figures computed here
on the worker (judging/reports). Two kinds: every run's means (the collection's table) and one run turn
by turn. Their fingerprint covers the judges' relevance labels, the runs and their rankings and
responses, and the collection's topics and turns (`EVALUATION_READS`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from annotation.models import Collection, Judge, Ranking, RelevanceJudgment, Response, Run, Topic, Turn
from judging.measures.ir import Evaluation, EvaluationError
from judging.reports.tasks import Progress
from judging.scores.relevance import answer_only_runs, runs_evaluate

# The report kinds of the two pages, and the version of their figures' shape and computation.
EVALUATION_RUNS = "evaluation-runs"
EVALUATION_RUN = "evaluation-run"
VERSION = 1

# The tables the figures are read from: a write to any of them makes the next view compute again.
EVALUATION_READS = (Judge, RelevanceJudgment, Topic, Turn, Run, Ranking, Response)


def evaluation_params(data: dict[str, Any], *, run: Run | None = None) -> dict[str, Any]:
    """The evaluation form's cleaned data as a report's JSON choices: the judge by name, the threshold,
    and the run of the per-turn page."""
    params: dict[str, Any] = {"judge": data["judge"].name, "rel": data["rel"]}
    if run is not None:
        params["run"] = run.name
    return params


def _judge(name: str) -> Judge:
    judge = Judge.objects.filter(name=name).first()
    if judge is None:
        raise EvaluationError(f"judge {name} no longer exists")
    return judge


def evaluation_runs_compute(
    *, collection: Collection, params: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """Every run's mean scores under the choices, as the collection's page shows them; the per-turn
    values stay out (the run page computes its own). What cannot be evaluated (a judge without labels
    here) is `{"error": why}`, which the page shows as it did when it computed in the request."""
    try:
        evaluation = runs_evaluate(
            collection=collection,
            judge=_judge(params["judge"]),
            rel_threshold=params["rel"],
            progress=lambda done, total: progress(done, total, "runs"),
        )
    except EvaluationError as exc:
        return {"error": str(exc)}
    stored = asdict(evaluation)
    stored["per_turn"] = {}
    return {"evaluation": stored, "answer_only": answer_only_runs(collection)}


def evaluation_run_compute(
    *, collection: Collection, params: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """One run's scores turn by turn and its mean under the choices (or `{"error": why}`)."""
    run = Run.objects.filter(collection=collection, name=params["run"]).first()
    try:
        if run is None:
            raise EvaluationError(f"run {params['run']} no longer exists")
        evaluation = runs_evaluate(
            collection=collection, judge=_judge(params["judge"]), runs=[run], rel_threshold=params["rel"]
        )
    except EvaluationError as exc:
        return {"error": str(exc)}
    return {"evaluation": asdict(evaluation)}


def evaluation_of(stored: dict[str, Any] | None) -> Evaluation | None:
    """The evaluation a report stored, as `runs_evaluate` returned it (without per-turn values on the
    collection's page); None without figures or with an error."""
    if stored is None or "evaluation" not in stored:
        return None
    return Evaluation(**stored["evaluation"])


def run_rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    """The collection page's rows: each run's means, best primary score first."""
    return [
        {
            "run": run,
            "values": [evaluation.runs[run][m] for m in evaluation.measures],
            "missing": evaluation.missing[run],
        }
        for run in evaluation.ranked_runs()
    ]


def turn_rows(evaluation: Evaluation, run: str) -> list[dict[str, Any]]:
    """The run page's rows: the run's scores on each judged turn, missing turns at 0."""
    missing = set(evaluation.missing[run])
    return [
        {
            "turn": turn,
            "values": [evaluation.per_turn[run][turn][m] for m in evaluation.measures],
            "missing": turn in missing,
        }
        for turn in evaluation.turns
    ]
