"""The judges page of a collection (organisers only): a GET form picks the reference judge."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection
from annotation.permissions import organiser_required
from annotation.typed import AuthenticatedRequest
from core.api_errors import form_error_json
from judging.quality.judges.forms import ReferenceForm
from judging.quality.judges.selectors import LABEL_TASKS, JudgeRow
from judging.quality.judges.stored import (
    JUDGES,
    JUDGES_PER_PAGE,
    judges_compute,
    judges_page_read,
    judges_reads,
)
from judging.reports.store import report_current, report_for, report_shown_row

# The console's downloads of a judge's labels, by the task whose labels each holds.
DOWNLOADS = (
    ("relevance", "qrels", "qrels"),
    ("ptkb", "ptkb-qrels", "PTKB qrels"),
    ("nuggets", "nuggets", "nuggets"),
    ("support", "support-labels", "support labels"),
)


def _downloads(collection: Collection, row: JudgeRow) -> list[tuple[str, str]]:
    links = [
        (
            label,
            f"{reverse('console-export', args=[collection.name, kind])}?{urlencode({'judge': row.judge.name})}",
        )
        for task, kind, label in DOWNLOADS
        if row.labels.get(task)
    ]
    if row.labels.get("relevance") or row.labels.get("ptkb"):
        query = urlencode({"judge": row.judge.name})
        links.append(
            ("judgment log", f"{reverse('console-export', args=[collection.name, 'judgment-log'])}?{query}")
        )
    return links


@organiser_required
@require_GET
def judges_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """A page of the collection's judges (by name); `?format=json` gives every judge's figures."""
    collection = get_object_or_404(Collection, name=name)
    form = ReferenceForm(request.GET, judges=judges_with_labels(collection=collection, task="relevance"))
    reference = form.chosen() if form.is_valid() else None
    kind, version = JUDGES
    params = {"reference": reference.id if reference else None}
    if request.GET.get("format") == "json":
        if not form.is_valid():
            return form_error_json(form)
        figures = report_current(
            kind=kind, version=version, collection=collection, params=params, reads=judges_reads()
        )
        if figures is None:
            figures = judges_compute(collection=collection, params=params)
        return JsonResponse(figures)
    stored = report_for(
        kind=kind,
        version=version,
        collection=collection,
        params=params,
        reads=judges_reads(),
        compute="judging.quality.judges.stored.judges_compute",
        deferred=True,
    )
    shown_row = report_shown_row(stored)
    page = judges_page_read(request=request, report=shown_row) if shown_row is not None else None
    rows = page.rows if page is not None else []
    labelled = set(page.tasks) if page is not None else set()
    # Only the tasks some judge labelled here get a column: a relevance collection has no nugget labels.
    shown = [i for i, task in enumerate(LABEL_TASKS) if task.key in labelled]
    agreement_url = reverse("judging:agreement-report", args=[collection.name])
    lines = [
        {
            "row": row,
            "cells": [row.cells[i] for i in shown],
            "downloads": _downloads(collection, row),
            "compare": (
                f"{agreement_url}?{urlencode({'task': 'relevance', 'a': row.judge.name, 'b': reference.name})}"
                if reference and row.agreement
                else ""
            ),
        }
        for row in rows
    ]
    return render(
        request,
        "quality/judges.html",
        {
            "collection": collection,
            "form": form,
            "reference": reference,
            "lines": lines,
            "pager": page.pager if page is not None else None,
            "per_page": JUDGES_PER_PAGE,
            "tasks": [LABEL_TASKS[i] for i in shown],
            "pools": page.pools if page is not None else [],
            "stored": stored,
            "shown": shown,
        },
        status=200 if form.is_valid() else 400,
    )
