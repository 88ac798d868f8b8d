"""Pages that show two of judging's features together. They sit above the features, which never import
one another: the run evaluation of a collection with the hybrid estimate panel beside it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection
from annotation.permissions import organiser_required
from judging.evaluation.views import evaluation_from_query
from judging.hybrid.views import evaluation_estimate
from judging.scores.relevance import answer_only_runs


@organiser_required
def evaluation_runs(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    form, evaluation, error, status = evaluation_from_query(request, collection, None)
    rows = []
    if evaluation is not None:
        rows = [
            {
                "run": run,
                "values": [evaluation.runs[run][m] for m in evaluation.measures],
                "missing": evaluation.missing[run],
            }
            for run in evaluation.ranked_runs()
        ]
    # The estimate panel: each run's hybrid estimate with its interval, for the chosen judges and method.
    hybrid, hybrid_status = evaluation_estimate(request, collection)
    context = {
        "collection": collection,
        "form": form,
        "evaluation": evaluation,
        "rows": rows,
        "answer_only": answer_only_runs(collection) if evaluation is not None else [],
        "error": error,
        **hybrid,
    }
    return render(request, "evaluation/runs.html", context, status=max(status, hybrid_status))
