"""The quality dashboard of a collection, and pausing or resuming an assessor from it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.models import AssessorPause, Collection
from annotation.permissions import organiser_required
from annotation.relevance.quality.pauses import assessor_pause, assessor_resume
from core.pagination import page_of
from judging.quality.forms import QualityForm
from judging.quality.selectors import QualitySettings
from judging.quality.stored import QUALITY, quality_params, quality_reads, quality_rows
from judging.reports.store import report_for, report_shown

# Assessors per page of the dashboard's table (and of its drift): a campaign of a hundred assessors is
# read a page at a time, each page costing what one page of them costs.
ASSESSORS_PER_PAGE = 20


@organiser_required
@require_GET
def dashboard(request: HttpRequest, name: str) -> HttpResponse:
    """Per assessor: gold accuracy, agreement with co-assessors, speed, drift and flags."""
    collection = get_object_or_404(Collection, name=name)
    # Bars left out of the query keep their defaults, shown filled in.
    form = QualityForm(
        {**QualityForm.defaults(), **request.GET.dict()} if request.GET else None, collection=collection
    )
    valid = form.is_bound and form.is_valid()
    settings = form.settings() if valid else QualitySettings()
    adjudicated = form.cleaned_data.get("adjudicated") if valid else None
    kind, version = QUALITY
    stored = report_for(
        kind=kind,
        version=version,
        collection=collection,
        params=quality_params(settings=settings, adjudicated=adjudicated),
        reads=quality_reads(),
        compute="judging.quality.stored.quality_compute",
    )
    shown = report_shown(stored)
    assessors = []
    pager = None
    if shown is not None:
        pager = page_of(
            request, shown["assessors"], param="page", anchor="quality-table", per_page=ASSESSORS_PER_PAGE
        )
        paused = set(AssessorPause.objects.filter(collection=collection).values_list("user_id", flat=True))
        assessors = quality_rows(pager.page.object_list, paused=paused)
    return render(
        request,
        "quality/dashboard.html",
        {
            "collection": collection,
            "form": form if form.is_bound else QualityForm(collection=collection),
            "settings": settings,
            "adjudicated": adjudicated,
            "assessors": assessors,
            "assessor_pages": pager,
            "stored": stored,
            "shown": shown,
        },
        status=400 if form.is_bound and form.errors else 200,
    )


@organiser_required
@require_POST
def pause(request: HttpRequest, name: str, username: str) -> HttpResponse:
    """Give the assessor no new unit in this collection until resumed (the unit they hold stays theirs)."""
    collection = get_object_or_404(Collection, name=name)
    user = get_object_or_404(get_user_model(), username=username)
    assessor_pause(collection=collection, user=user, by=request.user)  # type: ignore[arg-type]
    messages.success(request, f"{username} is paused in {collection.name}: no new units until resumed.")
    return _back(request, collection)


@organiser_required
@require_POST
def resume(request: HttpRequest, name: str, username: str) -> HttpResponse:
    """Let a paused assessor take new units again."""
    collection = get_object_or_404(Collection, name=name)
    user = get_object_or_404(get_user_model(), username=username)
    if assessor_resume(collection=collection, user=user):
        messages.success(request, f"{username} may take new units in {collection.name} again.")
    else:
        messages.info(request, f"{username} was not paused in {collection.name}.")
    return _back(request, collection)


def _back(request: HttpRequest, collection: Collection) -> HttpResponse:
    """To the dashboard with the bars and the page of assessors it was showing (the action's query string)."""
    url = reverse("judging:quality-dashboard", args=[collection.name])
    query = QualityForm(request.GET, collection=collection).bars_query() if request.GET else ""
    page = request.GET.get("page", "")
    if page.isdigit():
        query = f"{query}&page={page}" if query else f"page={page}"
    return redirect(f"{url}?{query}" if query else url)
