"""Organiser pages for run evaluation: the runs x measures table of a collection and one run per turn.

Thin views: the judge and the relevance threshold come from the query string (a table can be bookmarked
and shared), validated here; the figures are a stored report (`judging.evaluation.reports`), computed by
a task worker, so a page answers at once with them or with how their computation stands. The
collection's page, which adds the hybrid estimate panel, is `judging.views.evaluation_runs`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection, Run
from annotation.permissions import organiser_required
from judging.evaluation.forms import EvaluationForm
from judging.evaluation.reports import (
    EVALUATION_READS,
    EVALUATION_RUN,
    EVALUATION_RUNS,
    VERSION,
    evaluation_of,
    evaluation_params,
    turn_rows,
)
from judging.reports.store import ReportView, report_for, report_shown
from judging.scores.relevance import DEFAULT_REL_THRESHOLD


def evaluation_form(request: HttpRequest, collection: Collection) -> EvaluationForm:
    """The form of the query string of `request`: unbound until a judge is named."""
    data = None
    if "judge" in request.GET:
        # A link naming only the judge gets the documented default threshold, not a form error.
        data = request.GET.copy()
        data.setdefault("rel", str(DEFAULT_REL_THRESHOLD))
    return EvaluationForm(data, collection=collection, initial={"rel": DEFAULT_REL_THRESHOLD})


def evaluation_report(
    collection: Collection, form: EvaluationForm, run: Run | None = None
) -> tuple[ReportView | None, dict[str, Any] | None, int]:
    """(the stored report of a valid form or None, the figures to show or None, status): every run's
    means, or with `run` that run's scores per turn (`evaluation_of` reads the evaluation in them)."""
    if not form.is_bound:
        return None, None, 200
    if not form.is_valid():
        return None, None, 400
    report = report_for(
        kind=EVALUATION_RUNS if run is None else EVALUATION_RUN,
        version=VERSION,
        collection=collection,
        params=evaluation_params(form.cleaned_data, run=run),
        reads=EVALUATION_READS,
        compute=(
            "judging.evaluation.reports.evaluation_runs_compute"
            if run is None
            else "judging.evaluation.reports.evaluation_run_compute"
        ),
    )
    stored = report_shown(report)
    return report, stored, 400 if report.failed or (stored and "error" in stored) else 200


@organiser_required
def evaluation_index(request: HttpRequest) -> HttpResponse:
    collections = Collection.objects.annotate(n_runs=Count("runs", distinct=True))
    return render(request, "evaluation/index.html", {"collections": collections})


@organiser_required
def evaluation_run_turns(request: HttpRequest, name: str, run: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    run_obj = get_object_or_404(Run, collection=collection, name=run)
    form = evaluation_form(request, collection)
    report, stored, status = evaluation_report(collection, form, run_obj)
    evaluation = evaluation_of(stored)
    context = {
        "collection": collection,
        "run": run_obj,
        "form": form,
        "report": report,
        "evaluation": evaluation,
        "error": (stored or {}).get("error", ""),
        "rows": turn_rows(evaluation, run_obj.name) if evaluation else [],
        "mean": [evaluation.runs[run_obj.name][m] for m in evaluation.measures] if evaluation else [],
    }
    return render(request, "evaluation/run_turns.html", context, status=status)
