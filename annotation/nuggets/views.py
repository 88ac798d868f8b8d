"""Pages where assessors copy gold nuggets as spans of relevant passages, mark duplicates, and write gold responses.

An assessor reaches only their own nuggets: every nugget is fetched through the assessor's judge, so
another assessor's nugget is a 404. The page's span changes go to the JSON endpoints of
annotation/nuggets/api.py, answered with the changed nuggets, so the page updates only what changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import BadRequest
from django.db.models import Count, QuerySet
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.judge_access import judges_readable
from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, GoldResponse, Judge, Nugget, RelevanceJudgment, Turn
from annotation.nuggets.selectors import (
    NuggetStats,
    TurnCounts,
    nugget_payload,
    nugget_set_stats,
    nugget_turn_counts,
    nugget_turn_rows,
    relevance_judge_chosen,
    relevant_passages,
)
from annotation.nuggets.services import gold_response_save
from annotation.permissions import is_organiser
from annotation.selectors import assessor_judge, collection_counts, turns_in_reading_order
from annotation.services import judge_for_assessor
from annotation.typed import AuthenticatedRequest, choice_field
from core.api_errors import form_error_json
from core.form_fields import ModelMultipleChoiceField
from core.names import assessor_judge_name
from core.pagination import page_of

DEFAULT_MIN_GRADE = int(getattr(settings, "NUGGET_MIN_GRADE", 1))


class RelevanceChoiceForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.none(), required=False, label="Relevance judge")
    min_grade = forms.IntegerField(min_value=0, max_value=4, required=False, label="Grade at least")

    def __init__(
        self, *args: Any, collection: Collection, user: AbstractBaseUser | AnonymousUser, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        # Only judges with grades here that this user may read, so the chooser never offers another
        # collection's judge nor another assessor's; one query, whatever the number of judges.
        self.choosable = judges_with_labels(collection=collection, task="relevance").filter(
            pk__in=judges_readable(user=user).values("pk")
        )
        choice_field(self, "judge").queryset = self.choosable


def _collection(name: str) -> Collection:
    return get_object_or_404(Collection, name=name)


def _turn(collection: Collection, turn_id: str) -> Turn:
    return get_object_or_404(Turn.objects.select_related("topic"), collection=collection, turn_id=turn_id)


def _relevance_choice(
    request: AuthenticatedRequest, collection: Collection
) -> tuple[RelevanceChoiceForm, Judge | None, int]:
    relevance_judge_chosen(user=request.user, value=request.GET.get("judge"))
    form = RelevanceChoiceForm(request.GET or None, collection=collection, user=request.user)
    judge, min_grade = None, DEFAULT_MIN_GRADE
    if form.is_bound:
        if not form.is_valid():
            raise BadRequest(
                "; ".join(f"{field}: {' '.join(map(str, errors))}" for field, errors in form.errors.items())
            )
        judge = form.cleaned_data["judge"]
        if form.cleaned_data["min_grade"] is not None:
            min_grade = form.cleaned_data["min_grade"]
    if judge is None:
        judge = form.choosable.order_by("name").first()
    # The chooser shows the judge and grade the page counts with, also when the request named none
    # (a blank chooser hid which judge's grades were used).
    shown = RelevanceChoiceForm(
        initial={"judge": judge, "min_grade": min_grade}, collection=collection, user=request.user
    )
    choice_field(shown, "judge").empty_label = None if judge is not None else "no relevance judge yet"
    return shown, judge, min_grade


def _bad_page_request(exc: BadRequest) -> HttpResponse:
    # Plain text: the reason may quote what the request sent.
    return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")


@dataclass(frozen=True)
class CollectionTurns:
    collection: Collection
    n_turns: int


@dataclass(frozen=True)
class TurnRow:
    """A turn on the nugget pages' list: its relevant passages and the assessor's nuggets counted, and
    the state of the assessor's gold response (None: none written; True: a draft)."""

    turn: Turn
    n_relevant: int
    n_nuggets: int
    draft: bool | None


@login_required
def nugget_index(request: AuthenticatedRequest) -> HttpResponse:
    collections = list(Collection.objects.all())
    turns = collection_counts(collection_ids=[c.pk for c in collections])
    rows = [CollectionTurns(c, turns[c.pk]["turns"]) for c in collections]
    return render(request, "nuggets/index.html", {"collections": rows})


def _count_by_turn(rows: QuerySet[Any]) -> dict[int, int]:
    return dict(rows.values_list("turn_id").annotate(n=Count("pk")).order_by())


# Turns per page of a collection's nugget list.
TURNS_PER_PAGE = 50


@login_required
def nugget_turns(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    try:
        form, relevance_judge, min_grade = _relevance_choice(request, collection)
    except BadRequest as exc:
        return _bad_page_request(exc)
    # Reading never creates the assessor's judge: one who has written nothing has no nuggets yet.
    judge = assessor_judge(request.user)
    # A page of turns at a time in reading order, and one grouped query per count over that page's
    # turns only: counting nuggets and relevant passages in one query joins both tables to every turn, and
    # counting them over every turn grows with the collection.
    pager = page_of(
        request,
        turns_in_reading_order(collection=collection),
        param="page",
        anchor="nugget-turns",
        per_page=TURNS_PER_PAGE,
    )
    shown: list[Turn] = list(pager.page.object_list)
    pks = [turn.pk for turn in shown]
    nuggets = _count_by_turn(Nugget.objects.filter(judge=judge, turn_id__in=pks)) if judge is not None else {}
    relevant = (
        _count_by_turn(
            RelevanceJudgment.objects.filter(judge=relevance_judge, turn_id__in=pks, grade__gte=min_grade)
        )
        if relevance_judge is not None
        else {}
    )
    drafts = (
        dict(GoldResponse.objects.filter(judge=judge, turn_id__in=pks).values_list("turn_id", "is_draft"))
        if judge is not None
        else {}
    )
    rows = [
        TurnRow(turn, relevant.get(turn.pk, 0), nuggets.get(turn.pk, 0), drafts.get(turn.pk))
        for turn in shown
    ]
    query = f"?judge={relevance_judge.pk}&min_grade={min_grade}" if relevance_judge else ""
    return render(
        request,
        "nuggets/turns.html",
        {
            "collection": collection,
            "form": form,
            "rows": rows,
            "pager": pager,
            "query": query,
            "relevance_judge": relevance_judge,
        },
    )


@login_required
def nugget_turn(request: AuthenticatedRequest, name: str, turn_id: str) -> HttpResponse:
    collection = _collection(name)
    turn = _turn(collection, turn_id)
    try:
        form, relevance_judge, min_grade = _relevance_choice(request, collection)
    except BadRequest as exc:
        return _bad_page_request(exc)
    judge = assessor_judge(request.user)
    passages = (
        relevant_passages(turn=turn, relevance_judge=relevance_judge, min_grade=min_grade)
        if relevance_judge
        else []
    )
    nuggets = (
        Nugget.objects.filter(judge=judge, turn=turn).order_by("id")
        if judge is not None
        else Nugget.objects.none()
    )
    earlier = Turn.objects.filter(topic=turn.topic, position__lt=turn.position).order_by("position")
    item_url = reverse("nuggets-update", args=[collection.name, turn.turn_id, 0])
    data = {
        "texts": {p.passage_id: p.text for p in passages if p.text is not None},
        "nuggets": [nugget_payload(n) for n in nuggets],
        "relevance_judge": relevance_judge.pk if relevance_judge else None,
        "urls": {
            "create": reverse("nuggets-create", args=[collection.name, turn.turn_id]),
            "item": item_url,
        },
    }
    return render(
        request,
        "nuggets/turn.html",
        {
            "collection": collection,
            "turn": turn,
            "earlier": earlier,
            "ptkb": turn.topic.ptkb.all(),
            "passages": passages,
            "form": form,
            "relevance_judge": relevance_judge,
            "min_grade": min_grade,
            "data": data,
        },
    )


class NuggetChoice(ModelMultipleChoiceField[Nugget]):
    def label_from_instance(self, obj: Nugget) -> str:
        return f"{obj.key} {obj.text}"


class GoldResponseForm(forms.Form):
    text = forms.CharField(
        strip=False, required=False, widget=forms.Textarea(attrs={"rows": 12}), label="Gold response"
    )
    nuggets = NuggetChoice(
        queryset=Nugget.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, nuggets: QuerySet[Nugget], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "nuggets").queryset = nuggets


@login_required
def gold_response(request: AuthenticatedRequest, name: str, turn_id: str) -> HttpResponse:
    collection = _collection(name)
    turn = _turn(collection, turn_id)
    # A POST writes (and so creates the assessor's judge); a GET only reads.
    judge = (
        judge_for_assessor(user=request.user) if request.method == "POST" else assessor_judge(request.user)
    )
    own = (
        Nugget.objects.filter(judge=judge, turn=turn).order_by("id")
        if judge is not None
        else Nugget.objects.none()
    )
    current = GoldResponse.objects.filter(judge=judge, turn=turn).first() if judge is not None else None
    wants_json = "application/json" in request.headers.get("Accept", "")
    if request.method == "POST":
        form = GoldResponseForm(request.POST, nuggets=own)
        if not form.is_valid():
            if wants_json:
                return form_error_json(form)
        else:
            final = request.POST.get("action") == "submit"
            current = gold_response_save(
                judge=judge_for_assessor(user=request.user),  # the judge read above: no second query
                turn=turn,
                text=form.cleaned_data["text"],
                nuggets=list(form.cleaned_data["nuggets"]),
                is_draft=not final,
            )
            if wants_json:
                return JsonResponse({"saved": current.updated_at.isoformat(), "draft": current.is_draft})
            return redirect("nuggets-gold", collection.name, turn.turn_id)
    else:
        initial = {"text": current.text, "nuggets": list(current.nuggets.all())} if current else {}
        form = GoldResponseForm(initial=initial, nuggets=own)
    return render(
        request,
        "nuggets/gold_response.html",
        {
            "collection": collection,
            "turn": turn,
            "form": form,
            "current": current,
            "earlier": Turn.objects.filter(topic=turn.topic, position__lt=turn.position).order_by("position"),
            "ptkb": turn.topic.ptkb.all(),
        },
    )


@login_required
def nugget_stats_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """Counts of a nugget set; organisers pick any judge, assessors see their own set."""
    collection = _collection(name)
    judges = (
        list(judges_with_labels(collection=collection, task="nuggets")) if is_organiser(request.user) else []
    )
    own = assessor_judge(request.user)
    judge = own
    wanted = request.GET.get("judge")
    if wanted:
        chosen = next((j for j in judges if str(j.pk) == wanted), None)
        if chosen is None and (own is None or wanted != str(own.pk)):
            raise Http404("no such nugget set")
        judge = chosen or own
    # Every set's figures and a page of the chosen set's turns, from the counts PostgreSQL keeps per
    # judge and turn: the same queries whatever the sets' sizes.
    summaries = nugget_set_stats(collection=collection, judges=judges)
    turns: list[TurnCounts] = []
    pager = None
    if judge is not None:
        stats = next((s for s in summaries if s.judge.pk == judge.pk), None)
        if stats is None:
            stats = nugget_set_stats(collection=collection, judges=[judge])[0]
        rows = nugget_turn_rows(collection=collection, judge=judge)
        pager = page_of(request, rows, param="page", anchor="nugget-stats", per_page=TURNS_PER_PAGE)
        turns = nugget_turn_counts(pager.page.object_list, stats=stats)
    else:  # an assessor with no labels yet: their (empty) set, under the name it will have
        label = assessor_judge_name(request.user.get_username())
        stats = NuggetStats(judge=Judge(name=label, kind=Judge.Kind.ASSESSOR))
    return render(
        request,
        "nuggets/stats.html",
        {"collection": collection, "stats": stats, "summaries": summaries, "turns": turns, "pager": pager},
    )
