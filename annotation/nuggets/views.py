"""Pages where assessors copy gold nuggets as spans of relevant passages, mark duplicates, and write gold responses.

An assessor reaches only their own nuggets: every nugget is fetched through the assessor's judge, so
another assessor's nugget is a 404. Span changes are small JSON posts answered with the changed
nuggets, so the page updates only what changed; a refused span is a 400 with the reason.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.formats.base import excerpt
from annotation.judge_access import NOT_SHARED, judge_readable, judges_readable
from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, GoldResponse, Judge, Nugget, Passage, RelevanceJudgment, Turn
from annotation.nuggets.selectors import (
    NuggetStats,
    nugget_judges,
    nugget_payload,
    nugget_stats,
    relevant_passages,
)
from annotation.nuggets.services import (
    NuggetRejected,
    gold_response_save,
    nugget_create,
    nugget_delete,
    nugget_duplicate_mark,
    nugget_span_update,
    relevance_grade,
)
from annotation.permissions import is_organiser
from annotation.selectors import assessor_judge, collection_counts, turn_key
from annotation.services import judge_for_assessor
from annotation.typed import AuthenticatedRequest, choice_field
from core.api_errors import error_json, form_error_json
from core.form_fields import ModelMultipleChoiceField
from core.json_body import BadJsonBody, read_json_body
from core.names import assessor_judge_name

DEFAULT_MIN_GRADE = int(getattr(settings, "NUGGET_MIN_GRADE", 1))
_F = TypeVar("_F", bound=forms.Form)


class SpanForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=0)
    # Spans are checked against the passage exactly as sent; trimming is the service's job.
    text = forms.CharField(strip=False, max_length=100_000)


class NewSpanForm(SpanForm):
    passage_id = forms.CharField(max_length=255)
    relevance_judge = forms.IntegerField(required=False)


class DuplicateForm(forms.Form):
    duplicate_of = forms.IntegerField(required=False)


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
        self.fields["judge"].queryset = self.choosable  # type: ignore[attr-defined]


def _collection(name: str) -> Collection:
    return get_object_or_404(Collection, name=name)


def _turn(collection: Collection, turn_id: str) -> Turn:
    return get_object_or_404(Turn.objects.select_related("topic"), collection=collection, turn_id=turn_id)


def _own_nugget(request: AuthenticatedRequest, turn: Turn, pk: int) -> Nugget:
    """The assessor's own nugget of this turn; anyone else's is a 404."""
    judge = assessor_judge(request.user)
    if judge is None:  # no labels yet, so no nuggets of theirs
        raise Http404("no such nugget of yours")
    return get_object_or_404(Nugget, pk=pk, turn=turn, judge=judge)


def _chosen_judge(request: AuthenticatedRequest, value: object) -> Judge | None:
    """The relevance judge named by id in a request, if the user may read its grades.

    A judge the user may not read is a 403 with the rule (a page or a JSON body says why); an id that
    names no judge is a 400. Checked on every request that names one, pages and posts alike.
    """
    if value in (None, ""):
        return None
    try:
        judge = Judge.objects.filter(pk=int(str(value))).first()
    except (TypeError, ValueError):
        judge = None
    if judge is None:
        raise BadRequest(f"no relevance judge {excerpt(value, 20)}")
    if not judge_readable(user=request.user, judge=judge):
        raise PermissionDenied(f"You may not read the grades of judge {judge.pk}: {NOT_SHARED}.")
    return judge


def _relevance_choice(
    request: AuthenticatedRequest, collection: Collection
) -> tuple[RelevanceChoiceForm, Judge | None, int]:
    _chosen_judge(request, request.GET.get("judge"))
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


def _refused(reason: str, code: str = "invalid", status: int = 400) -> JsonResponse:
    return error_json(detail=reason, code=code, status=status)


def _json_form(request: HttpRequest, form_class: type[_F]) -> _F | JsonResponse:
    """The form bound to the JSON body and valid, or the 400 (413 for size) that says what is refused."""
    try:
        form = form_class(read_json_body(request))
    except BadJsonBody as exc:
        return _refused(exc.reason, exc.code, exc.status)
    return form if form.is_valid() else form_error_json(form)


@login_required
def nugget_index(request: AuthenticatedRequest) -> HttpResponse:
    collections = list(Collection.objects.all())
    turns = collection_counts(collection_ids=[c.pk for c in collections])
    for collection in collections:
        collection.n_turns = turns[collection.pk]["turns"]  # type: ignore[attr-defined]
    return render(request, "nuggets/index.html", {"collections": collections})


def _count_by_turn(rows: QuerySet[Any]) -> dict[int, int]:
    return dict(rows.values_list("turn_id").annotate(n=Count("pk")).order_by())


@login_required
def nugget_turns(request: AuthenticatedRequest, name: str) -> HttpResponse:
    collection = _collection(name)
    try:
        form, relevance_judge, min_grade = _relevance_choice(request, collection)
    except BadRequest as exc:
        return _bad_page_request(exc)
    # Reading never creates the assessor's judge: one who has written nothing has no nuggets yet.
    judge = assessor_judge(request.user)
    # One grouped query per count: counting nuggets and relevant passages in one query joins both
    # tables to every turn, a product that grows with each.
    turns = list(Turn.objects.filter(collection=collection).select_related("topic"))
    nuggets = (
        _count_by_turn(Nugget.objects.filter(judge=judge, turn__collection=collection))
        if judge is not None
        else {}
    )
    relevant = (
        _count_by_turn(
            RelevanceJudgment.objects.filter(
                judge=relevance_judge, turn__collection=collection, grade__gte=min_grade
            )
        )
        if relevance_judge is not None
        else {}
    )
    for turn in turns:
        turn.n_nuggets = nuggets.get(turn.pk, 0)  # type: ignore[attr-defined]
        turn.n_relevant = relevant.get(turn.pk, 0)  # type: ignore[attr-defined]
    drafts = (
        dict(
            GoldResponse.objects.filter(judge=judge, turn__collection=collection).values_list(
                "turn_id", "is_draft"
            )
        )
        if judge is not None
        else {}
    )
    rows = [(turn, drafts.get(turn.pk)) for turn in sorted(turns, key=turn_key)]
    query = f"?judge={relevance_judge.pk}&min_grade={min_grade}" if relevance_judge else ""
    return render(
        request,
        "nuggets/turns.html",
        {
            "collection": collection,
            "form": form,
            "rows": rows,
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


@login_required
@require_POST
def nugget_create_view(request: AuthenticatedRequest, name: str, turn_id: str) -> JsonResponse:
    collection = _collection(name)
    turn = _turn(collection, turn_id)
    form = _json_form(request, NewSpanForm)
    if isinstance(form, JsonResponse):
        return form
    passage = Passage.objects.filter(
        collection=collection, passage_id=form.cleaned_data["passage_id"]
    ).first()
    if passage is None:
        return _refused(f"passage {form.cleaned_data['passage_id']} is not in collection {collection.name}")
    try:
        relevance_judge = _chosen_judge(request, form.cleaned_data["relevance_judge"])
    except PermissionDenied as exc:
        return _refused(str(exc), "permission_denied", 403)
    except BadRequest as exc:
        return _refused(str(exc))
    try:
        nugget = nugget_create(
            judge=judge_for_assessor(user=request.user),
            turn=turn,
            passage=passage,
            start=form.cleaned_data["start"],
            end=form.cleaned_data["end"],
            text=form.cleaned_data["text"],
            relevance=relevance_grade(
                relevance_judge=relevance_judge, turn=turn, passage_id=passage.passage_id
            ),
        )
    except NuggetRejected as exc:
        return _refused(str(exc))
    return JsonResponse({"nugget": nugget_payload(nugget)}, status=201)


@login_required
@require_POST
def nugget_update_view(request: AuthenticatedRequest, name: str, turn_id: str, pk: int) -> JsonResponse:
    turn = _turn(_collection(name), turn_id)
    nugget = _own_nugget(request, turn, pk)
    form = _json_form(request, SpanForm)
    if isinstance(form, JsonResponse):
        return form
    try:
        nugget = nugget_span_update(nugget=nugget, **form.cleaned_data)
    except NuggetRejected as exc:
        return _refused(str(exc))
    return JsonResponse({"nugget": nugget_payload(nugget)})


@login_required
@require_POST
def nugget_delete_view(request: AuthenticatedRequest, name: str, turn_id: str, pk: int) -> JsonResponse:
    turn = _turn(_collection(name), turn_id)
    nugget = _own_nugget(request, turn, pk)
    followers = list(nugget.duplicates.values_list("id", flat=True))
    nugget_delete(nugget=nugget)
    changed = Nugget.objects.filter(pk__in=followers)
    return JsonResponse({"deleted": pk, "changed": [nugget_payload(n) for n in changed]})


@login_required
@require_POST
def nugget_duplicate_view(request: AuthenticatedRequest, name: str, turn_id: str, pk: int) -> JsonResponse:
    turn = _turn(_collection(name), turn_id)
    nugget = _own_nugget(request, turn, pk)
    form = _json_form(request, DuplicateForm)
    if isinstance(form, JsonResponse):
        return form
    target = None
    if form.cleaned_data["duplicate_of"] is not None:
        target = Nugget.objects.filter(
            pk=form.cleaned_data["duplicate_of"], turn=turn, judge=nugget.judge
        ).first()
        if target is None:
            return _refused("a nugget can only duplicate another of your nuggets of the same turn")
    followers = list(nugget.duplicates.values_list("id", flat=True))
    try:
        nugget = nugget_duplicate_mark(nugget=nugget, duplicate_of=target)
    except NuggetRejected as exc:
        return _refused(str(exc))
    changed = Nugget.objects.filter(pk__in=[nugget.pk, *followers])
    return JsonResponse({"changed": [nugget_payload(n) for n in changed]})


class NuggetChoice(ModelMultipleChoiceField):
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
    judges = nugget_judges(collection=collection) if is_organiser(request.user) else []
    own = assessor_judge(request.user)
    judge = own
    wanted = request.GET.get("judge")
    if wanted:
        chosen = next((j for j in judges if str(j.pk) == wanted), None)
        if chosen is None and (own is None or wanted != str(own.pk)):
            raise Http404("no such nugget set")
        judge = chosen or own
    summaries = [nugget_stats(collection=collection, judge=j) for j in judges]
    if judge is not None:
        stats = nugget_stats(collection=collection, judge=judge)
    else:  # an assessor with no labels yet: their (empty) set, under the name it will have
        label = assessor_judge_name(request.user.get_username())
        stats = NuggetStats(judge=Judge(name=label, kind=Judge.Kind.ASSESSOR))
    return render(
        request,
        "nuggets/stats.html",
        {"collection": collection, "stats": stats, "summaries": summaries},
    )
