"""Organiser pages for agreement: one comparison of two judges, a run ranking under two judges, the
printable campaign report, and the live view of assessors during a campaign.

Thin views: a form validates the query string (so a report can be bookmarked and shared), one call to
`judging.agreement.reports` builds it, and the same report is served as a page, JSON, CSV or a chart.
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import urlencode

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection
from annotation.permissions import organiser_required
from core.api_errors import error_json, form_error_json
from judging.agreement.campaign_page import PAIRS_PER_PAGE, campaign_shown
from judging.agreement.forms import ComparisonForm, RankingForm
from judging.agreement.reports import (
    comparison_csv,
    confusion_csv,
    confusion_heatmap,
    confusion_rows,
    rank_csv,
    ranking_scatter,
)
from judging.agreement.selectors import TASKS
from judging.agreement.stored import (
    CAMPAIGN,
    COMPARISON,
    RANKING,
    agreement_reads,
    campaign_compute,
    comparison_compute,
    comparison_params,
    ranking_compute,
    ranking_params,
)
from judging.reports.store import ReportView, report_current, report_for, report_shown, report_shown_row

# The scatter of the run ranking shown beside a comparison, drawn from the comparison's stored figures.
BESIDE = ("beside.svg", "beside.png")
CONTENT_TYPES = {"json": "application/json", "csv": "text/csv", "svg": "image/svg+xml", "png": "image/png"}


def _errors(form: forms.Form) -> str:
    return "; ".join(f"{field}: {' '.join(map(str, messages))}" for field, messages in form.errors.items())


def _stored(
    report: tuple[str, int],
    collection: Collection,
    params: dict[str, Any],
    compute: str,
    *,
    deferred: bool = False,
) -> ReportView:
    kind, version = report
    return report_for(
        kind=kind,
        version=version,
        collection=collection,
        params=params,
        reads=agreement_reads(),
        compute=f"judging.agreement.stored.{compute}",
        deferred=deferred,
    )


def _current(
    report: tuple[str, int], collection: Collection, params: dict[str, Any], compute
) -> dict[str, Any]:
    """A download's figures: the stored ones when current, else computed here (never stale)."""
    kind, version = report
    stored = report_current(
        kind=kind, version=version, collection=collection, params=params, reads=agreement_reads()
    )
    return stored if stored is not None else compute(collection=collection, params=params)


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
            data = form.cleaned_data
            stored = _stored(COMPARISON, collection, comparison_params(data), "comparison_compute")
            context["stored"] = stored
            shown = report_shown(stored)
            if shown is not None:
                context["report"], context["error"] = shown["report"], shown["error"]
            if context.get("report"):
                context["confusion_rows"] = confusion_rows(context["report"])
                if shown and shown["ranking"]:
                    beside = {
                        "measure": shown["ranking"]["measure"],
                        "a": data["a"].name,
                        "b": data["b"].name,
                    }
                    context["ranking"] = {"report": shown["ranking"]["report"], "query": urlencode(beside)}
            status = 400 if stored.done and not context.get("report") else 200
        else:
            context["error"] = _errors(form)
            status = 400
    return render(request, "agreement/report.html", context, status=status)


@organiser_required
def agreement_download(request: HttpRequest, name: str, kind: str) -> HttpResponse:
    """The comparison as report.json, report.csv, confusion.csv, confusion.svg or confusion.png, and the
    scatter of the run ranking beside it (beside.svg, beside.png), from the comparison's stored figures."""
    if kind not in {"report.json", "report.csv", "confusion.csv", "confusion.svg", "confusion.png", *BESIDE}:
        raise Http404("unknown download")
    collection = get_object_or_404(Collection, name=name)
    form = ComparisonForm(request.GET, collection=collection)
    if not form.is_valid():
        return form_error_json(form)
    figures = _current(COMPARISON, collection, comparison_params(form.cleaned_data), comparison_compute)
    report, error = figures["report"], figures["error"]
    if report is None:
        return error_json(detail=error, code="invalid", status=400)
    if kind in BESIDE:
        if figures["ranking"] is None:
            raise Http404("no run ranking beside this comparison")
        beside = figures["ranking"]["report"]
        ext: Literal["svg", "png"] = "png" if kind.endswith(".png") else "svg"
        response = HttpResponse(ranking_scatter(beside, ext), content_type=CONTENT_TYPES[ext])
        response["Content-Disposition"] = (
            f'attachment; filename="{collection.name}-{beside["measure"]}-scatter.{ext}"'
        )
        return response
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


@organiser_required
def ranking_report(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    form = RankingForm(request.GET or None, initial={"measure": "ndcg@5"}, collection=collection)
    context: dict[str, Any] = {"collection": collection, "form": form, "query": request.GET.urlencode()}
    status = 200
    if form.is_bound:
        if form.is_valid():
            stored = _stored(RANKING, collection, ranking_params(form.cleaned_data), "ranking_compute")
            context["stored"] = stored
            shown = report_shown(stored)
            if shown is not None:
                context["report"], context["error"] = shown["report"], shown["error"]
            status = 400 if stored.done and not context.get("report") else 200
        else:
            context["error"] = _errors(form)
            status = 400
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
    figures = _current(RANKING, collection, ranking_params(form.cleaned_data), ranking_compute)
    report, error = figures["report"], figures["error"]
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
    """The campaign report a page of pairs per section; `?format=json` and `?format=html` (the whole
    report on one printable page) every pair."""
    collection = get_object_or_404(Collection, name=name)
    whole = request.GET.get("format")
    if whole == "json":
        return JsonResponse(_current(CAMPAIGN, collection, {}, campaign_compute))
    if whole == "html":
        figures = _current(CAMPAIGN, collection, {}, campaign_compute)
        # Its style sheet linked, not inline as in the campaign_report command's file: the site's content
        # security policy refuses inline styles.
        return render(request, "agreement/campaign.html", {"report": figures, "whole": True})
    stored = _stored(CAMPAIGN, collection, {}, "campaign_compute", deferred=True)
    shown = report_shown_row(stored)
    report = campaign_shown(request=request, report=shown) if shown is not None else None
    context = {"collection": collection, "stored": stored, "report": report, "per_page": PAIRS_PER_PAGE}
    return render(request, "agreement/campaign.html", context)


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
