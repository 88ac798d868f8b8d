"""Organiser pages for run evaluation: the runs x measures table of a collection and one run per turn.

Thin views over `judging.scores.relevance.runs_evaluate` (the collection's page, which adds the hybrid
estimate panel, is `judging.views.evaluation_runs`); the judge and the relevance threshold come from the
query string so a table can be bookmarked and shared.
"""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection, Run
from annotation.permissions import organiser_required
from judging.evaluation.forms import EvaluationForm
from judging.measures.ir import EvaluationError
from judging.scores.relevance import DEFAULT_REL_THRESHOLD, runs_evaluate


def evaluation_from_query(request: HttpRequest, collection: Collection, runs: list[Run] | None):
    """(form, evaluation or None, error, status) for the query string of `request`."""
    data = None
    if "judge" in request.GET:
        # A link naming only the judge gets the documented default threshold, not a form error.
        data = request.GET.copy()
        data.setdefault("rel", str(DEFAULT_REL_THRESHOLD))
    form = EvaluationForm(data, collection=collection, initial={"rel": DEFAULT_REL_THRESHOLD})
    if data is None:
        return form, None, "", 200
    if not form.is_valid():
        return form, None, "", 400
    try:
        evaluation = runs_evaluate(
            collection=collection,
            judge=form.cleaned_data["judge"],
            runs=runs,
            rel_threshold=form.cleaned_data["rel"],
        )
    except EvaluationError as exc:
        return form, None, str(exc), 400
    return form, evaluation, "", 200


@organiser_required
def evaluation_index(request: HttpRequest) -> HttpResponse:
    collections = Collection.objects.annotate(n_runs=Count("runs", distinct=True))
    return render(request, "evaluation/index.html", {"collections": collections})


@organiser_required
def evaluation_run_turns(request: HttpRequest, name: str, run: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    run_obj = get_object_or_404(Run, collection=collection, name=run)
    form, evaluation, error, status = evaluation_from_query(request, collection, [run_obj])
    rows = []
    if evaluation is not None:
        missing = set(evaluation.missing[run_obj.name])
        rows = [
            {
                "turn": turn,
                "values": [evaluation.per_turn[run_obj.name][turn][m] for m in evaluation.measures],
                "missing": turn in missing,
            }
            for turn in evaluation.turns
        ]
    context = {
        "collection": collection,
        "run": run_obj,
        "form": form,
        "evaluation": evaluation,
        "rows": rows,
        "error": error,
        "mean": [evaluation.runs[run_obj.name][m] for m in evaluation.measures] if evaluation else [],
    }
    return render(request, "evaluation/run_turns.html", context, status=status)
