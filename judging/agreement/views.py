"""Organiser pages for agreement: one comparison of two judges, a run ranking under two judges, the
printable campaign report, and the live view of assessors during a campaign.

Thin views: a form validates the query string (so a report can be bookmarked and shared), one call to
`judging.agreement.reports` builds it, and the same report is served as a page, JSON, CSV or a chart.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection
from annotation.permissions import organiser_required
from core.api_errors import error_json, form_error_json
from judging.agreement.forms import ComparisonForm, RankingForm
from judging.agreement.reports import (
    campaign_report,
    comparison_csv,
    comparison_report,
    confusion_csv,
    confusion_heatmap,
    confusion_rows,
    measures_for_task,
    rank_csv,
    rank_report,
    ranking_scatter,
)
from judging.agreement.selectors import TASKS
from judging.measures.agreement import AgreementUndefined

CONTENT_TYPES = {"json": "application/json", "csv": "text/csv", "svg": "image/svg+xml", "png": "image/png"}


def _errors(form: forms.Form) -> str:
    return "; ".join(f"{field}: {' '.join(map(str, messages))}" for field, messages in form.errors.items())


def _comparison(collection: Collection, form: ComparisonForm) -> tuple[dict[str, Any] | None, str]:
    data = form.cleaned_data
    try:
        report = comparison_report(
            collection=collection,
            task=data["task"],
            judge_a=data["a"],
            judge_b=data["b"],
            topics=data["topics"] or None,
            condition=data["condition"] or None,
            binary_threshold=data["threshold"],
        )
    except (AgreementUndefined, ValueError) as exc:
        return None, str(exc)
    return report, ""


def _ranking_beside(collection: Collection, form: ComparisonForm) -> dict[str, Any] | None:
    """The run ranking under the same two judges by the task's first run measure, for the scatter on the
    comparison page; None when the task has no run measure or no run is scored under both judges."""
    data = form.cleaned_data
    measures = measures_for_task(data["task"])
    if not measures:
        return None
    ranking_form = RankingForm({"measure": measures[0], "a": data["a"].name, "b": data["b"].name})
    if not ranking_form.is_valid():
        return None
    report, _error = _ranking(collection, ranking_form)
    if report is None:
        return None
    return {
        "report": report,
        "query": urlencode({"measure": measures[0], "a": data["a"].name, "b": data["b"].name}),
    }


@organiser_required
def agreement_index(request: HttpRequest) -> HttpResponse:
    collections = Collection.objects.all()
    return render(request, "agreement/index.html", {"collections": collections})


@organiser_required
def agreement_report(request: HttpRequest, name: str) -> HttpResponse:
    """The comparison page; without a query string, the form to choose one."""
    collection = get_object_or_404(Collection, name=name)
    # A query naming only the task (the page reloads so when the task changes) lists that task's judges.
    chosen = request.GET if "a" in request.GET or "b" in request.GET else None
    form = ComparisonForm(
        chosen, initial={"task": request.GET.get("task") or "relevance"}, collection=collection
    )
    context: dict[str, Any] = {"collection": collection, "form": form, "query": request.GET.urlencode()}
    status = 200
    if form.is_bound:
        if form.is_valid():
            context["report"], context["error"] = _comparison(collection, form)
            if context["report"]:
                context["confusion_rows"] = confusion_rows(context["report"])
                context["ranking"] = _ranking_beside(collection, form)
        else:
            context["error"] = _errors(form)
        status = 200 if context.get("report") else 400
    return render(request, "agreement/report.html", context, status=status)


@organiser_required
def agreement_download(request: HttpRequest, name: str, kind: str) -> HttpResponse:
    """The comparison as report.json, report.csv, confusion.csv, confusion.svg or confusion.png."""
    if kind not in {"report.json", "report.csv", "confusion.csv", "confusion.svg", "confusion.png"}:
        raise Http404("unknown download")
    collection = get_object_or_404(Collection, name=name)
    form = ComparisonForm(request.GET, collection=collection)
    if not form.is_valid():
        return form_error_json(form)
    report, error = _comparison(collection, form)
    if report is None:
        return error_json(detail=error, code="invalid", status=400)
    return _download(
        kind,
        report,
        csv_body=comparison_csv if kind == "report.csv" else confusion_csv,
        chart=confusion_heatmap,
        stem=f"{collection.name}-{report['task']}-agreement",
    )


def _download(kind: str, report: dict[str, Any], *, csv_body, chart, stem: str) -> HttpResponse:
    base, ext = kind.rsplit(".", 1)
    if ext == "json":
        body: str | bytes = json.dumps(report, indent=2)
    elif ext == "csv":
        body = csv_body(report)
    else:
        body = chart(report, ext)
    response = HttpResponse(body, content_type=CONTENT_TYPES[ext])
    response["Content-Disposition"] = f'attachment; filename="{stem}-{base}.{ext}"'
    return response


def _ranking(collection: Collection, form: RankingForm) -> tuple[dict[str, Any] | None, str]:
    data = form.cleaned_data
    try:
        report = rank_report(
            collection=collection,
            measure=data["measure"],
            judge_a=data["a"],
            judge_b=data["b"],
            importance_judge=data.get("importance_judge"),
        )
    except ValueError as exc:
        return None, str(exc)
    if report["n_runs"] == 0:
        return None, f"no run has a {data['measure']} score under both {data['a'].name} and {data['b'].name}"
    return report, ""


@organiser_required
def ranking_report(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    form = RankingForm(request.GET or None, initial={"measure": "ndcg@5"}, collection=collection)
    context: dict[str, Any] = {"collection": collection, "form": form, "query": request.GET.urlencode()}
    status = 200
    if form.is_bound:
        if form.is_valid():
            context["report"], context["error"] = _ranking(collection, form)
        else:
            context["error"] = _errors(form)
        status = 200 if context.get("report") else 400
    return render(request, "agreement/ranking.html", context, status=status)


@organiser_required
def ranking_download(request: HttpRequest, name: str, kind: str) -> HttpResponse:
    """The run ranking as ranking.json, ranking.csv, scatter.svg or scatter.png."""
    if kind not in {"ranking.json", "ranking.csv", "scatter.svg", "scatter.png"}:
        raise Http404("unknown download")
    collection = get_object_or_404(Collection, name=name)
    form = RankingForm(request.GET)
    if not form.is_valid():
        return form_error_json(form)
    report, error = _ranking(collection, form)
    if report is None:
        return error_json(detail=error, code="invalid", status=400)
    return _download(
        kind,
        report,
        csv_body=rank_csv,
        chart=ranking_scatter,
        stem=f"{collection.name}-{report['measure']}-ranking",
    )


@organiser_required
def campaign(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    if request.GET.get("format") == "json":
        return JsonResponse(campaign_report(collection=collection))
    return render(request, "agreement/campaign.html", {"report": campaign_report(collection=collection)})


@organiser_required
def live(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    task = request.GET.get("task", "relevance")
    if task not in TASKS:
        task = "relevance"
    interval = _poll_interval(request.GET.get("interval"))
    return render(
        request,
        "agreement/live.html",
        {
            "collection": collection,
            "task": task,
            "tasks": list(TASKS),
            "interval_ms": interval,
            "interval_seconds": interval / 1000,
        },
    )


LIVE_INTERVAL_MS = (5000, 250, 60_000)  # default, fastest, slowest


def _poll_interval(value: str | None) -> int:
    """The page's polling interval in milliseconds from `?interval=`, clamped so a typo cannot hammer the
    server; tests use a short one to watch the table update."""
    default, fastest, slowest = LIVE_INTERVAL_MS
    try:
        return min(max(int(value), fastest), slowest) if value else default
    except ValueError:
        return default
