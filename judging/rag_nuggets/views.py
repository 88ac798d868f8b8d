"""Organiser pages of TREC RAG nugget scores: every run's four nuggetizer scores under a chosen assignment
judge and importance judge, ranked by any of them; one run topic by topic; and nuggetizer's three files
(created nuggets, assignments, a run's per-answer metrics) with the choices in their names.

Thin views: `NuggetScoresForm` validates the query string (a table is a link to share); the pages show
the scores of a stored report (`reports`), computed by a task worker, at once or say how their
computation stands; the downloads are the text the export functions and `nugget_scores_text` write.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.models import Collection, Judge, Run
from annotation.permissions import organiser_required
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from annotation.rag_nuggets.io import assignments_export, created_nuggets_export
from annotation.rag_nuggets.lists import assigned_list_owners
from core.api_errors import error_json, form_error_json
from core.streaming import text_chunks
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.rag_nuggets.forms import (
    SCORE_CHOICES,
    NuggetScoresForm,
    choices_slug,
    importance_slug,
)
from judging.rag_nuggets.reports import (
    NUGGET_READS,
    NUGGET_SCORES,
    NUGGET_SCORES_RUN,
    VERSION,
    nugget_params,
    nugget_scores_run_compute,
    stored_table,
)
from judging.rag_nuggets.selectors import DEFAULT_SCORE, ScoreTable, run_topics
from judging.reports.store import ReportView, report_current, report_for, report_shown
from judging.scores.rag_nuggets import ANSWERED_ONLY_NOTE, nugget_scores_text

DOWNLOADS = ("nuggets", "assignments", "metrics")


def _form(request: HttpRequest, collection: Collection) -> NuggetScoresForm:
    # Unbound until a judge is named: the page then shows the form only.
    data = request.GET if "judge" in request.GET else None
    return NuggetScoresForm(data, collection=collection, initial={"order": DEFAULT_SCORE})


def _context(request: HttpRequest, collection: Collection, form: NuggetScoresForm) -> dict[str, object]:
    return {
        "collection": collection,
        "form": form,
        "query": request.GET.urlencode(),
        "score_names": SCORE_NAMES,
        "score_labels": dict(SCORE_CHOICES),
        "importance_default": IMPORTANCE_DEFAULT,
        "answered_only_note": ANSWERED_ONLY_NOTE,
    }


def _report(
    collection: Collection, form: NuggetScoresForm, run: Run | None = None
) -> tuple[ReportView, ScoreTable | None, str]:
    """The stored report of the form's choices (with `run`, that run's topics too), its table ranked by
    the chosen score once there are figures to show, and why there are none when they cannot be."""
    report = report_for(
        kind=NUGGET_SCORES if run is None else NUGGET_SCORES_RUN,
        version=VERSION,
        collection=collection,
        params=nugget_params(form.cleaned_data, run=run.name if run is not None else None),
        reads=NUGGET_READS,
        compute=(
            "judging.rag_nuggets.reports.nugget_scores_compute"
            if run is None
            else "judging.rag_nuggets.reports.nugget_scores_run_compute"
        ),
    )
    stored = report_shown(report)
    return report, stored_table(stored, order=form.cleaned_data["order"]), (stored or {}).get("error", "")


@organiser_required
def nugget_scores_page(request: HttpRequest, name: str) -> HttpResponse:
    """Every run's four scores, ranked by the chosen one, with the downloads under the same choices."""
    collection = get_object_or_404(Collection, name=name)
    form = _form(request, collection)
    context = _context(request, collection, form)
    status = 200
    if form.is_bound:
        if form.is_valid():
            report, context["table"], context["error"] = _report(collection, form)
            context["report"] = report
            status = 400 if report.failed or context["error"] else 200
        else:
            status = 400
    return render(request, "evaluation/nugget_scores.html", context, status=status)


@organiser_required
def nugget_scores_run(request: HttpRequest, name: str, run: str) -> HttpResponse:
    """One run's four scores topic by topic under the same choices, and its mean."""
    collection = get_object_or_404(Collection, name=name)
    run_obj = get_object_or_404(Run, collection=collection, name=run)
    form = _form(request, collection)
    context = {**_context(request, collection, form), "run": run_obj}
    status = 200
    if form.is_bound:
        if form.is_valid():
            report, table, context["error"] = _report(collection, form, run_obj)
            context["report"], context["table"] = report, table
            status = 400 if report.failed or context["error"] else 200
            if table is not None:
                context["topics"] = run_topics(table, run_obj.name)
                context["row"] = next((row for row in table.rows if row.run == run_obj.name), None)
        else:
            status = 400
    return render(request, "evaluation/nugget_run.html", context, status=status)


def _file_part(text: str) -> str:
    # Judge and run names may hold any character; a file name keeps letters, digits, '.', '_' and '-'.
    return re.sub(r"[^\w.-]+", "_", text, flags=re.ASCII).strip("._") or "_"


def _nuggets_judge(collection: Collection, judge: Judge) -> Judge | None:
    """The one judge whose lists the assignment judge's nuggets come from; None when there are several."""
    owners = list(assigned_list_owners(collection=collection, judge=judge)[:2])
    return owners[0] if len(owners) == 1 else None


def _attachment(body: str | Iterator[str], filename: str) -> HttpResponse | StreamingHttpResponse:
    """The file as a download; an iterator of lines (the assignments: a line per answer, hundreds of
    thousands of labels at TREC RAG's size) is streamed as it is read from the database."""
    content_type = "application/x-ndjson; charset=utf-8"
    response: HttpResponse | StreamingHttpResponse
    if isinstance(body, str):
        response = HttpResponse(body, content_type=content_type)
    else:
        response = StreamingHttpResponse(text_chunks(body), content_type=content_type)
    # Every part of the name went through _file_part (and a collection name is a slug): plain ASCII.
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@organiser_required
def nugget_scores_download(
    request: HttpRequest, name: str, kind: str
) -> HttpResponse | StreamingHttpResponse:
    """nuggetizer's files under the page's choices: the nugget lists (`nuggets`), the assignments
    (`assignments`), or one run's per-answer scores ending in their mean (`metrics`, with `run`)."""
    if kind not in DOWNLOADS:
        raise Http404("unknown download")
    collection = get_object_or_404(Collection, name=name)
    form = NuggetScoresForm(request.GET, collection=collection)
    if not form.is_valid():
        return form_error_json(form)
    data = form.cleaned_data
    choices = _file_part(choices_slug(data))
    if kind == "nuggets":
        owner = data["nuggets_judge"] or _nuggets_judge(collection, data["judge"])
        if owner is None:
            return error_json(
                detail="the assignments cover several judges' nugget lists (or none): "
                "choose whose lists to download under 'Nugget lists of'",
                code="invalid",
                status=400,
                fields={"nuggets_judge": ["choose the judge whose nugget lists to download"]},
            )
        body = created_nuggets_export(
            collection=collection, judge=owner, importance_judge=data["importance_judge"]
        )
        # The nuggets file depends on the lists and the vital/okay labels only, not on the assignments.
        importance = _file_part(importance_slug(data))
        return _attachment(body, f"{collection.name}-nuggets-{_file_part(owner.name)}-{importance}.jsonl")
    if kind == "assignments":
        lines = assignments_export(
            collection=collection,
            judge=data["judge"],
            nuggets_judge=data["nuggets_judge"],
            importance_judge=data["importance_judge"],
            answered_only=data["answered_only"],
        )
        return _attachment(lines, f"{collection.name}-assignments-{choices}.jsonl")
    run = request.GET.get("run", "")
    # The run page's stored scores when they are current; else computed here, never stale.
    params = nugget_params(data, run=run)
    scores = report_current(
        kind=NUGGET_SCORES_RUN, version=VERSION, collection=collection, params=params, reads=NUGGET_READS
    ) or nugget_scores_run_compute(collection=collection, params=params, progress=lambda *_: None)
    if run not in scores["scores"]["runs"]:
        return error_json(
            detail="choose a run scored under these choices: nuggetizer's metrics file is one run's",
            code="invalid",
            status=400,
            fields={"run": ["not a run scored under these choices" if run else "this field is required"]},
        )
    body = nugget_scores_text(scores["scores"]["answers"])
    return _attachment(body, f"{collection.name}-metrics-{_file_part(run)}-{choices}.jsonl")
