"""The organiser's console: collections, uploads, pools and work, downloads, the campaign dashboard (people
and their invitations are in people.py).

Every page but the account page is for organisers only (`organiser_required`).
"""

from __future__ import annotations

import io
import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from annotation.console import selectors
from annotation.console.forms import (
    EXPORT_KINDS,
    UPLOAD_OPTIONS,
    CollectionForm,
    ExportForm,
    PoolForm,
    RelevanceWorkForm,
    SupportWorkForm,
    UploadForm,
)
from annotation.console.services import (
    ConsoleError,
    api_token_get,
    api_token_reset,
    collection_create,
    support_work_assign,
)
from annotation.console.tasks import import_job_resumable, import_job_resume, import_job_start
from annotation.console.uploads import UploadRefused, import_job_create
from annotation.formats.base import import_max_bytes, megabytes
from annotation.models import Collection, ImportJob, Pool
from annotation.nuggets.io import gold_responses_export, nuggets_export
from annotation.permissions import organiser_required
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.relevance.io import (
    LOG_TASKS,
    judgment_log_rows,
    judgment_log_write,
    ptkb_qrels_lines,
    qrels_lines,
)
from annotation.relevance.pooling import PoolingFailed, pool_build, turns_resolve
from annotation.relevance.selectors import assignments_progress
from annotation.selectors import collection_counts
from annotation.support.io import support_labels_export
from annotation.support.services import SupportConflict
from annotation.typed import AuthenticatedRequest
from core.upload_limit import LimitedUploadHandler, upload_limit_install
from core.wording import plural


def _collection(name: str) -> Collection:
    return get_object_or_404(Collection, name=name)


# --- Collections and uploads -----------------------------------------------------------------------


@organiser_required
def collection_new(request: AuthenticatedRequest) -> HttpResponse:
    form = CollectionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            collection = collection_create(
                name=form.cleaned_data["name"], description=form.cleaned_data["description"]
            )
        except ConsoleError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(
                request,
                f"Collection {collection.name} created. Upload its topics first, or TREC RAG answers as a "
                "run: they create the topics they name.",
            )
            return redirect("console-collection", name=collection.name)
    status = 400 if request.method == "POST" else 200
    return render(request, "console/collection_new.html", {"form": form}, status=status)


# CSRF is checked inside, after the size limit is in place: the middleware's check reads the body first.
@csrf_exempt
@organiser_required
def collection_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """A collection's contents, its upload form and its recent uploads; POST stores an upload.

    An upload past IMPORT_MAX_BYTES is stopped while it streams in (nothing of it is kept) and answered
    413 with the form and the reason, instead of being stored to be refused by its import.
    """
    limit = upload_limit_install(request, limit=import_max_bytes())
    return _collection_page(request, name, limit)


@csrf_protect
def _collection_page(request: AuthenticatedRequest, name: str, limit: LimitedUploadHandler) -> HttpResponse:
    collection = _collection(name)
    form = UploadForm(request.POST or None, request.FILES or None)
    if limit.refused:
        # The form keeps what was typed and shows only the reason (not "this field is required").
        form = UploadForm(request.POST)
        form.full_clean()
        form.errors.clear()
        form.add_error(
            None,
            f"The file is larger than the upload limit of {megabytes(limit.limit)} (setting "
            "IMPORT_MAX_BYTES); nothing was stored. Import it with the command instead.",
        )
    elif request.method == "POST" and form.is_valid():
        try:
            job = import_job_create(
                collection=collection,
                kind=form.cleaned_data["kind"],
                upload=form.cleaned_data["file"],
                options=form.options(),
                user=request.user,
            )
        except UploadRefused as exc:
            form.add_error(None, str(exc))
        else:
            import_job_start(job=job)
            return redirect("console-import", name=collection.name, pk=job.pk)
    counts = collection_counts(collection_ids=[collection.pk])[collection.pk]
    return render(
        request,
        "console/collection.html",
        {
            "collection": collection,
            "counts": counts,
            "form": form,
            "jobs": ImportJob.objects.filter(collection=collection)[:15],
            "pools": Pool.objects.filter(collection=collection).annotate(size=Count("entries")),
            "upload_options": {kind: list(names) for kind, names in UPLOAD_OPTIONS.items()},
        },
        status=413 if limit.refused else 400 if request.method == "POST" else 200,
    )


def _job(name: str, pk: int) -> ImportJob:
    return get_object_or_404(ImportJob.objects.select_related("collection"), pk=pk, collection__name=name)


@organiser_required
def import_page(request: AuthenticatedRequest, name: str, pk: int) -> HttpResponse:
    job = _job(name, pk)
    state = selectors.import_job_state(job=job)
    unit = selectors.progress_unit(job=job)
    resumable = state.interrupted and import_job_resumable(job=job)
    return render(
        request,
        "console/import.html",
        {"collection": job.collection, "job": job, "state": state, "unit": unit, "resumable": resumable},
    )


@organiser_required
@require_POST
def import_resume(request: AuthenticatedRequest, name: str, pk: int) -> HttpResponse:
    job = _job(name, pk)
    try:
        import_job_resume(job=job)
    except UploadRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"The import of {job.file_name} is queued again.")
    return redirect("console-import", name=job.collection.name, pk=job.pk)


# --- Pools and work --------------------------------------------------------------------------------


@organiser_required
def pools_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    form = PoolForm(request.POST or None, collection=collection)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            turns = turns_resolve(collection=collection, turn_ids=data["turn_ids"])
            report = pool_build(
                collection=collection,
                name=data["name"],
                depth=data["depth"],
                turns=turns,
                adaptive=data["adaptive"],
                filter_judge=data["filter_judge"] if data["adaptive"] else None,
                min_grade=data["min_grade"] if data["adaptive"] else None,
                always_depth=data["always_depth"] or 5,
                replace=data["replace"],
            )
        except PoolingFailed as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Pool {report.pool.name}: {plural(report.size, 'pair')} over {plural(len(report.turns), 'turn')}; "
                f"the filter saved {report.saved}.",
            )
            if report.unfiltered:
                messages.warning(request, f"{report.unfiltered_text}.")
            return redirect("console-pool", name=collection.name, pool=report.pool.name)
    pools = selectors.pools_listed(collection=collection)
    return render(
        request,
        "console/pools.html",
        {"collection": collection, "form": form, "pools": pools},
        status=400 if request.method == "POST" else 200,
    )


@organiser_required
def pool_page(request: AuthenticatedRequest, name: str, pool: str) -> HttpResponse:
    collection = _collection(name)
    found = get_object_or_404(Pool.objects.select_related("filter_judge"), collection=collection, name=pool)
    return render(
        request,
        "console/pool.html",
        {"collection": collection, "summary": selectors.pool_summary(pool=found)},
    )


@organiser_required
def work_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """Hand out relevance work (a pool's units) and support work (topics in a condition)."""
    collection = _collection(name)
    relevance = RelevanceWorkForm(
        request.POST if request.POST.get("form") == "relevance" else None, collection=collection
    )
    support = SupportWorkForm(
        request.POST if request.POST.get("form") == "support" else None, collection=collection
    )
    if request.method == "POST" and relevance.is_bound and relevance.is_valid():
        data = relevance.cleaned_data
        try:
            assignment = assignment_create(
                pool=data["pool"],
                name=data["name"],
                assessors=data["assessors"],
                unit_kind=data["unit_kind"],
                redundancy=data["redundancy"],
                lease_minutes=data["lease_minutes"],
                with_ptkb=data["with_ptkb"],
                gold_judge=data["gold_judge"],
                gold_share=data["gold_share"],
            )
        except AssignmentFailed as exc:
            relevance.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Assignment {assignment.name}: {plural(assignment.units.count(), 'unit')} handed out.",
            )
            return redirect("console-work", name=collection.name)
    if request.method == "POST" and support.is_bound and support.is_valid():
        data = support.cleaned_data
        try:
            assigned = support_work_assign(
                topics=data["topics"],
                users=data["assessors"],
                condition=data["condition"],
                machine_judge=data["machine_judge"],
                max_citations=data["max_citations"],
                switch=data["switch"],
            )
        except (SupportConflict, ConsoleError) as exc:
            support.add_error(None, str(exc))
        else:
            messages.success(request, f"{plural(len(assigned), 'support assignment')} saved.")
            return redirect("console-work", name=collection.name)
    dashboard = selectors.campaign_dashboard(collection=collection)
    return render(
        request,
        "console/work.html",
        {
            "collection": collection,
            "relevance": relevance,
            "support": support,
            "progress": assignments_progress(assignments=dashboard.assignments),
        },
        status=400 if request.method == "POST" else 200,
    )


@organiser_required
def dashboard_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    return render(
        request,
        "console/dashboard.html",
        {"collection": collection, "dashboard": selectors.campaign_dashboard(collection=collection)},
    )


# --- Downloads -------------------------------------------------------------------------------------


@organiser_required
def exports_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    judges = {
        "qrels": selectors.relevance_judges(collection=collection),
        "ptkb-qrels": selectors.ptkb_judges(collection=collection),
        "nuggets": selectors.nugget_judges(collection=collection),
        "gold-responses": selectors.gold_response_judges(collection=collection),
        "support-labels": selectors.support_judges(collection=collection),
    }
    judges["judgment-log"] = selectors.relevance_judges(collection=collection)
    exports = [(kind, label, judges[kind]) for kind, label in EXPORT_KINDS.items()]
    return render(
        request,
        "console/exports.html",
        {"collection": collection, "exports": exports, "nugget_judges": judges["nuggets"]},
    )


@organiser_required
@require_GET
def export_download(request: AuthenticatedRequest, name: str, kind: str) -> HttpResponse:
    """One download, written by the function the matching export_* command calls."""
    collection = _collection(name)
    if kind not in EXPORT_KINDS:
        raise Http404("no such export")
    form = ExportForm(request.GET, kind=kind)
    if not form.is_valid():
        return HttpResponse(
            "; ".join(
                f"{field}: {' '.join(str(e) for e in errors)}" for field, errors in form.errors.items()
            ),
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    data = form.cleaned_data
    judge = data["judge"]
    stem = f"{collection.name}-{judge.name if judge else 'all'}"
    if kind == "qrels":
        lines = qrels_lines(collection=collection, judge=judge, include_gold=data["include_gold"])
        body, filename = "".join(lines), f"{stem}.qrels"
    elif kind == "ptkb-qrels":
        body, filename = "".join(ptkb_qrels_lines(collection=collection, judge=judge)), f"{stem}.ptkb.qrels"
    elif kind == "nuggets":
        body = nuggets_export(collection=collection, judge=judge, fmt=data["fmt"], dedup=data["dedup"])
        filename = f"{stem}-nuggets.{'jsonl' if data['fmt'] == 'jsonl' else 'json'}"
    elif kind == "gold-responses":
        body = gold_responses_export(
            collection=collection, judge=judge, nugget_judge=data["nugget_judge"], fmt=data["fmt"]
        )
        filename = f"{stem}-gold-responses.{'jsonl' if data['fmt'] == 'jsonl' else 'json'}"
    elif kind == "support-labels":
        rows = support_labels_export(collection=collection, judge=judge)
        body, filename = "".join(json.dumps(row) + "\n" for row in rows), f"{stem}-support.jsonl"
    else:
        buffer = io.StringIO()
        judgment_log_write(buffer, judgment_log_rows(collection=collection, judge=judge, tasks=LOG_TASKS))
        body, filename = buffer.getvalue(), f"{stem}-judgment-log.csv"
    content_type = "text/csv" if filename.endswith(".csv") else "text/plain"
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- The assessor's own page -----------------------------------------------------------------------


@login_required
def account_page(request: AuthenticatedRequest) -> HttpResponse:
    """Everyone's own page: their API token for scripts, which only they see."""
    return render(request, "console/account.html", {"token": api_token_get(user=request.user)})


@login_required
@require_POST
def account_token_reset(request: AuthenticatedRequest) -> HttpResponse:
    api_token_reset(user=request.user)
    messages.success(request, "A new API token was made; the old one no longer works.")
    return redirect("account")
