"""The adjudicator's pages (their queue, one disputed pair at a time) and the organiser's form.

An adjudication is reached only through its adjudicator (`adjudication_for_adjudicator`): anyone else,
another assessor or an organiser, gets a 404. The pair page reuses the relevance page's conversation and
PTKB partial and its 0-4 keys (static/js/adjudication.js); without JavaScript it is a plain form.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Collection, Passage, PtkbStatement, Turn
from annotation.permissions import organiser_required
from annotation.relevance.adjudication.forms import AdjudicationForm
from annotation.relevance.adjudication.models import Adjudication, AdjudicationItem
from annotation.relevance.adjudication.selectors import (
    adjudicated_grade,
    adjudication_for_adjudicator,
    adjudication_next_item,
    adjudications_for_adjudicator,
    earlier_grades,
)
from annotation.relevance.adjudication.services import (
    AdjudicationRefused,
    adjudication_assign,
    adjudication_grade,
)
from annotation.relevance.forms import GradeForm
from annotation.relevance.views import GRADES
from annotation.typed import AuthenticatedRequest
from core.wording import plural


def _adjudication_or_404(request: AuthenticatedRequest, pk: int) -> Adjudication:
    adjudication = adjudication_for_adjudicator(user=request.user, pk=pk)
    if adjudication is None:
        raise Http404("no such adjudication of yours")
    return adjudication


@login_required
def queue(request: AuthenticatedRequest) -> HttpResponse:
    """The adjudications given to the user, with pairs graded and to grade."""
    return render(
        request,
        "relevance/adjudication_queue.html",
        {"adjudications": adjudications_for_adjudicator(user=request.user)},
    )


@login_required
@require_POST
def start(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """Open the first disputed pair not graded yet; back to the queue when there is none."""
    adjudication = _adjudication_or_404(request, pk)
    found = adjudication_next_item(adjudication=adjudication)
    if found is None:
        messages.info(request, f"Every pair of {adjudication.judge.name} is adjudicated: thank you.")
        return redirect("adjudication-queue")
    return redirect("adjudication-item", pk=adjudication.pk, item_pk=found.pk)


@login_required
def item(request: AuthenticatedRequest, pk: int, item_pk: int) -> HttpResponse:
    """Grade one disputed pair 0-4 (a grade already given is shown and can be revised), then the next."""
    adjudication = _adjudication_or_404(request, pk)
    found = get_object_or_404(
        AdjudicationItem.objects.select_related("turn__topic"), pk=item_pk, adjudication=adjudication
    )
    found.adjudication = adjudication
    if request.method != "POST":
        return _item_page(request, adjudication, found)
    form = GradeForm(request.POST)
    if not form.is_valid():
        return _item_page(request, adjudication, found, form=form, status=400)
    adjudication_grade(
        item=found,
        grade=form.cleaned_data["grade"],
        time_spent_ms=form.cleaned_data["time_spent_ms"],
        key=form.cleaned_data["grade_key"],
    )
    after = adjudication_next_item(adjudication=adjudication, after=found)
    if after is None:
        messages.success(request, f"Every pair of {adjudication.judge.name} is adjudicated: thank you.")
        return redirect("adjudication-queue")
    return redirect("adjudication-item", pk=adjudication.pk, item_pk=after.pk)


def _item_page(
    request: AuthenticatedRequest,
    adjudication: Adjudication,
    found: AdjudicationItem,
    *,
    form: GradeForm | None = None,
    status: int = 200,
) -> HttpResponse:
    turn = found.turn
    current = adjudicated_grade(item=found)
    context = {
        "adjudication": adjudication,
        "item": found,
        "turn": turn,
        "earlier": Turn.objects.filter(topic_id=turn.topic_id, position__lt=turn.position).order_by(
            "position"
        ),
        "ptkb": PtkbStatement.objects.filter(topic_id=turn.topic_id),
        "passage": Passage.objects.filter(
            collection_id=adjudication.collection_id, passage_id=found.passage_id
        ).first(),
        "form": form or GradeForm(initial={"grade": current, "grade_key": uuid.uuid4()}),
        "grades": GRADES,
        "current_grade": current,
        "earlier_grades": earlier_grades(adjudication=adjudication, item=found)
        if adjudication.show_grades
        else [],
        "left": adjudication.items.filter(graded_at__isnull=True).count(),
        "total": adjudication.items.count(),
    }
    return render(request, "relevance/adjudication.html", context, status=status)


@organiser_required
def assign(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """The organiser's form: which judges, how far apart is disputed, who adjudicates, and the new judge."""
    collection = get_object_or_404(Collection, name=name)
    form = AdjudicationForm(request.POST or None, collection=collection)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                assigned = adjudication_assign(
                    collection=collection,
                    judges=list(data["judges"]),
                    adjudicator=data["adjudicator"],
                    name=data["name"],
                    rule=form.rule(),
                    show_grades=data["show_grades"],
                    by=request.user,
                )
            except AdjudicationRefused as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request,
                    f"{data['name']}: {plural(assigned.agreed, 'agreed pair')} written, "
                    f"{plural(assigned.disputed, 'disputed pair')} in {data['adjudicator'].get_username()}'s queue.",
                )
                return redirect("adjudication-assign", name=collection.name)
    adjudications = (
        Adjudication.objects.filter(collection=collection)
        .select_related("judge", "adjudicator")
        .order_by("-created_at")
    )
    return render(
        request,
        "relevance/adjudication_assign.html",
        {"collection": collection, "form": form, "adjudications": adjudications},
        status=status,
    )
