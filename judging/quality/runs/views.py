"""The run report page: each run's validation, and judged@k of every run under a judge (a stored report,
judging/quality/runs/stored.py), with its CSV."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.collection.checks import run_validations
from annotation.judge_menus import judges_with_labels
from annotation.models import Collection
from annotation.permissions import organiser_required
from annotation.typed import AuthenticatedRequest
from core.pagination import page_of
from judging.quality.runs.forms import JudgedForm
from judging.quality.runs.selectors import judged_csv
from judging.quality.runs.stored import JUDGED, JUDGED_READS, judged_compute, judged_params, judged_rows
from judging.reports.store import report_current, report_for, report_shown

# Runs per page of the validations (a track has up to 90 runs, each with its checks).
RUNS_PER_PAGE = 20


def _form(request: AuthenticatedRequest, collection: Collection) -> JudgedForm:
    return JudgedForm(request.GET, judges=judges_with_labels(collection=collection, task="relevance"))


def _params(form: JudgedForm, *, every: bool) -> dict[str, Any]:
    return judged_params(
        judge=form.cleaned_data["judge"] or "", depth=form.cleaned_data["depth"], every=every
    )


@organiser_required
@require_GET
def runs_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    form = _form(request, collection)
    # A page of the runs' validations at a time, each with its checks: the judged@k table above has them all.
    names = list(collection.runs.order_by("name").values_list("name", flat=True))
    pager = page_of(request, names, param="page", anchor="run-reports", per_page=RUNS_PER_PAGE)
    context: dict[str, object] = {
        "collection": collection,
        "form": form,
        "runs": run_validations(runs=collection.runs.filter(name__in=list(pager.page.object_list))),
        "run_pages": pager,
    }
    if form.is_valid():
        kind, version = JUDGED
        stored = report_for(
            kind=kind,
            version=version,
            collection=collection,
            params=_params(form, every=False),
            reads=JUDGED_READS,
            compute="judging.quality.runs.stored.judged_compute",
        )
        context["stored"] = stored
        shown = report_shown(stored)
        if shown is not None:
            context["shown"] = shown
            context["depth"] = shown["depth"]
            context["cutoffs"] = shown["cutoffs"]
            context["judge"] = shown["judges"][0] if shown["judges"] else None
            context["rows"] = shown["rows"]
    return render(request, "quality/runs.html", context, status=200 if form.is_valid() else 400)


@organiser_required
@require_GET
def runs_download(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """judged@k of every run as CSV, under the judge chosen or under every judge with grades: the stored
    figures when current, else computed here (never stale)."""
    collection = get_object_or_404(Collection, name=name)
    form = _form(request, collection)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(map(str, e))}" for field, e in form.errors.items())
        return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")
    params = _params(form, every=True)
    kind, version = JUDGED
    result = report_current(
        kind=kind, version=version, collection=collection, params=params, reads=JUDGED_READS
    )
    if result is None:
        result = judged_compute(collection=collection, params=params)
    response = HttpResponse(judged_csv(judged_rows(result)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{collection.name}-judged.csv"'
    return response
