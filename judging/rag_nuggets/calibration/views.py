"""The calibration page: two nugget evaluations of the same runs compared as TREC RAG reports it, run-level
Kendall's tau with its interval and the per-topic agreement with its spread; `?format=json` gives the same
report as the `nugget_calibration` command's JSON. A thin view over `nugget_calibration`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection
from annotation.permissions import organiser_required
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from core.api_errors import form_error_json
from judging.rag_nuggets.calibration.forms import CalibrationForm
from judging.rag_nuggets.calibration.selectors import nugget_calibration
from judging.rag_nuggets.selectors import DEFAULT_SCORE
from judging.scores.rag_nuggets import ANSWERED_ONLY_NOTE

PREFILLED = ("judge_a", "importance_a", "score", "answered_only")


@organiser_required
def calibration_page(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    # Evaluation B is what the page asks for: a query without it (the scores page's link, which names
    # the evaluation shown there as A) fills the form in instead of being refused.
    chosen = request.GET if "judge_b" in request.GET else None
    prefill = {key: request.GET[key] for key in PREFILLED if key in request.GET}
    form = CalibrationForm(chosen, collection=collection, initial={"score": DEFAULT_SCORE, **prefill})
    context: dict[str, Any] = {
        "collection": collection,
        "form": form,
        "importance_default": IMPORTANCE_DEFAULT,
        "answered_only_note": ANSWERED_ONLY_NOTE,
    }
    status = 200
    if form.is_bound:
        if not form.is_valid():
            if request.GET.get("format") == "json":
                return form_error_json(form)
            status = 400
        else:
            a, b = form.evaluations()
            report = nugget_calibration(
                collection=collection,
                a=a,
                b=b,
                score=form.cleaned_data["score"],
                answered_only=form.cleaned_data["answered_only"],
            )
            if request.GET.get("format") == "json":
                return JsonResponse(report)
            context["report"] = report
    return render(request, "agreement/calibration.html", context, status=status)
