"""The home page and a collection's contents (everybody's), and the organiser's console: new collections,
pools and work, downloads, the campaign dashboard, the account page (uploads are in console.uploads,
people and their invitations in console.people).

Every console page but the account page is for organisers only (`organiser_required`).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.families import FILE_KINDS
from annotation.judge_access import judges_readable
from annotation.judge_menus import judges_with_label_counts, judges_with_labels
from annotation.labels.files import Download
from annotation.models import Assignment, Collection, Pool, Topic
from annotation.permissions import is_organiser, organiser_required
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.relevance.io import LOG_TASKS, judgment_log_lines
from annotation.relevance.pooling import PoolingFailed, pool_build, turns_resolve
from annotation.relevance.selectors import assignments_progress
from annotation.selectors import TOPICS_PER_PAGE, collection_counts
from annotation.services import api_token_get, api_token_reset
from annotation.support.services import SupportConflict
from annotation.typed import AuthenticatedRequest
from console import selectors
from console.forms import (
    EXPORT_KINDS,
    JUDGMENT_LOG,
    CollectionForm,
    ExportForm,
    PoolForm,
    RelevanceWorkForm,
    SupportWorkForm,
)
from console.services import (
    ConsoleError,
    collection_create,
    support_work_assign,
)
from console.stored import PACE, PACE_READS, POOL_SUMMARY, pace_shown, pool_reads, pool_summary_shown
from core.ordering import natural_key
from core.pagination import page_of
from core.streaming import text_chunks
from core.wording import plural
from judging.reports.store import report_for, report_shown

# Turns per page of a pool's table: a track's pool has thousands.
POOL_TURNS_PER_PAGE = 50


def _collection(name: str) -> Collection:
    return get_object_or_404(Collection, name=name)


# --- Everybody's home and a collection's contents ---------------------------------------------------


@login_required
def home(request: HttpRequest) -> HttpResponse:
    collections = list(Collection.objects.all())
    counts = collection_counts(collection_ids=[c.pk for c in collections])
    context: dict[str, object] = {
        "collections": [(c, counts[c.pk]) for c in collections],
        "work_links": selectors.work_links(),
    }
    if is_organiser(request.user):
        context.update(selectors.organiser_home(user=request.user))
    return render(request, "console/home.html", context)


@login_required
def collection_detail(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    # Only the judges this reader may read: an assessor sees the machines, the files and their own
    # judge, never another assessor's name or how much they have judged.
    judges = judges_with_label_counts(
        collection=collection, task="relevance", judges=judges_readable(user=request.user)
    )
    # By number as people read it (2 before 10), not in the order the topics were imported; a page of
    # them at a time with their turns and PTKB, so that a track of hundreds of conversations costs one page.
    topics = sorted(collection.topics.all(), key=lambda t: natural_key(t.number))
    conversations = page_of(request, topics, param="page", anchor="conversations", per_page=TOPICS_PER_PAGE)
    shown: list[Topic] = list(conversations.page.object_list)
    prefetch_related_objects(shown, "ptkb", "turns")
    return render(
        request,
        "console/collection_detail.html",
        {
            "collection": collection,
            # Without each run's validation report, which grows with the topics (the run reports page reads it).
            "runs": collection.runs.defer("report"),
            "judges": judges,
            "topics": shown,
            "conversations": conversations,
        },
    )


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
    """A pool's size, what its filter saved and left, and a page of its turns: a stored report
    (console/stored.py), computed on the task worker."""
    collection = _collection(name)
    found = get_object_or_404(Pool.objects.select_related("filter_judge"), collection=collection, name=pool)
    kind, version = POOL_SUMMARY
    stored = report_for(
        kind=kind,
        version=version,
        collection=collection,
        params={"pool": found.pk},
        reads=pool_reads(found),
        compute="console.stored.pool_summary_compute",
    )
    context: dict[str, object] = {"collection": collection, "pool": found, "stored": stored}
    shown = report_shown(stored)
    if shown is not None and shown["error"] is None:
        summary = pool_summary_shown(found, shown)
        context["summary"] = summary
        context["turns"] = page_of(
            request, summary.turns, param="page", anchor="pool-turns", per_page=POOL_TURNS_PER_PAGE
        )
    return render(request, "console/pool.html", context)


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
    assignments = list(Assignment.objects.filter(pool__collection=collection).select_related("pool"))
    return render(
        request,
        "console/work.html",
        {
            "collection": collection,
            "relevance": relevance,
            "support": support,
            "progress": assignments_progress(assignments=assignments),
        },
        status=400 if request.method == "POST" else 200,
    )


@organiser_required
def dashboard_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    kind, version = PACE
    pace = report_for(
        kind=kind,
        version=version,
        collection=collection,
        params={},
        reads=PACE_READS,
        compute="console.stored.pace_compute",
    )
    shown = report_shown(pace)
    dashboard = selectors.campaign_dashboard(
        collection=collection, pace=pace_shown(shown) if shown is not None else ()
    )
    return render(
        request, "console/dashboard.html", {"collection": collection, "dashboard": dashboard, "pace": pace}
    )


# --- Downloads -------------------------------------------------------------------------------------


@organiser_required
def exports_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    exports = [
        (kind, file.title, selectors.file_judges(collection=collection, file=file), file.download_options)
        for kind, file in FILE_KINDS.items()
        if file.exporter is not None
    ]
    exports.append(
        (
            JUDGMENT_LOG,
            EXPORT_KINDS[JUDGMENT_LOG],
            judges_with_labels(collection=collection, task="relevance"),
            (),
        )
    )
    return render(
        request,
        "console/exports.html",
        {
            "collection": collection,
            "exports": exports,
            "nugget_judges": judges_with_labels(collection=collection, task="nuggets"),
        },
    )


@organiser_required
@require_GET
def export_download(
    request: AuthenticatedRequest, name: str, kind: str
) -> HttpResponse | StreamingHttpResponse:
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
    exporter = FILE_KINDS[kind].exporter if kind in FILE_KINDS else None
    if exporter is not None:
        written = exporter(Download(collection=collection, judge=judge, options=data))
        body, filename = written.body, stem + written.ending
    else:
        lines = judgment_log_lines(collection=collection, judge=judge, tasks=LOG_TASKS)
        body, filename = text_chunks(lines), f"{stem}-judgment-log.csv"
    content_type = "text/csv" if filename.endswith(".csv") else "text/plain"
    # Streamed: the file is read from the database as the client takes it, never whole in memory.
    response = StreamingHttpResponse(body, content_type=f"{content_type}; charset=utf-8")
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
