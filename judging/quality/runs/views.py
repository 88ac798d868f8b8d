"""The run report page: each run's validation, and judged@k of every run under a judge, with its CSV."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.models import Collection
from annotation.permissions import organiser_required
from annotation.typed import AuthenticatedRequest
from judging.quality.runs.forms import JudgedForm
from judging.quality.runs.selectors import (
    cutoffs,
    judged_at_k,
    judged_csv,
    pool_depth,
    relevance_judges,
    runs_with_reports,
)


def _form(request: AuthenticatedRequest, collection: Collection) -> JudgedForm:
    return JudgedForm(request.GET, judges=relevance_judges(collection=collection))


@organiser_required
@require_GET
def runs_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    form = _form(request, collection)
    context: dict[str, object] = {
        "collection": collection,
        "form": form,
        "runs": runs_with_reports(collection=collection),
    }
    if form.is_valid():
        depth = form.cleaned_data["depth"] or pool_depth(collection=collection)
        chosen = form.chosen(default="first")
        context["depth"] = depth
        context["cutoffs"] = cutoffs(depth)
        if chosen:
            judge = chosen[0]
            context["judge"] = judge
            context["rows"] = judged_at_k(
                collection=collection, judge_id=judge.id, judge_name=judge.name, depth=depth
            )
    return render(request, "quality/runs.html", context, status=200 if form.is_valid() else 400)


@organiser_required
@require_GET
def runs_download(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """judged@k of every run as CSV, under the judge chosen or under every judge with grades."""
    collection = get_object_or_404(Collection, name=name)
    form = _form(request, collection)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(map(str, e))}" for field, e in form.errors.items())
        return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")
    depth = form.cleaned_data["depth"] or pool_depth(collection=collection)
    rows = [
        row
        for judge in form.chosen(default="all")
        for row in judged_at_k(collection=collection, judge_id=judge.id, judge_name=judge.name, depth=depth)
    ]
    response = HttpResponse(judged_csv(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{collection.name}-judged.csv"'
    return response
