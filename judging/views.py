"""Pages that show two of judging's features together. They sit above the features, which never import
one another: the run evaluation of a collection with the hybrid estimate panel beside it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection
from annotation.permissions import organiser_required
from judging.evaluation.reports import evaluation_of, run_rows
from judging.evaluation.views import evaluation_form, evaluation_report
from judging.hybrid.views import evaluation_estimate


@organiser_required
def evaluation_runs(request: HttpRequest, name: str) -> HttpResponse:
    """Every run's means under the chosen judge, and the estimate panel: each run's hybrid estimate
    with its interval for the chosen judges and method. Both are stored reports, each answered at once."""
    collection = get_object_or_404(Collection, name=name)
    form = evaluation_form(request, collection)
    report, stored, status = evaluation_report(collection, form)
    evaluation = evaluation_of(stored)
    hybrid, hybrid_status = evaluation_estimate(request, collection)
    context = {
        "collection": collection,
        "form": form,
        "report": report,
        "evaluation": evaluation,
        "error": (stored or {}).get("error", ""),
        "rows": run_rows(evaluation) if evaluation is not None else [],
        "answer_only": (stored or {}).get("answer_only", []),
        **hybrid,
    }
    return render(request, "evaluation/runs.html", context, status=max(status, hybrid_status))
