"""Pages of TREC RAG nugget evaluation by people: the assessor's list of nugget work, the three step pages
(post-edit a nugget list, vital/okay, answer-nugget assignment), and the organiser's hand-out.

A piece of work has one page per turn of its topic (edit, importance) or per answer (assignment); every
id in a request is checked against the assessor's own work before anything is read or written. The edit
page's script sends each edit to the JSON endpoint of annotation/rag_nuggets/api.py.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.models import Collection, NuggetImportance, NuggetSupport, TopicWork, Turn
from annotation.permissions import is_organiser, organiser_required
from annotation.rag_nuggets import selectors
from annotation.rag_nuggets.forms import HandOutForm, TimeForm, posted_labels
from annotation.rag_nuggets.services import (
    NuggetWorkRefused,
    nugget_assignment_page_submit,
    nugget_edit_finish,
    nugget_importance_submit,
    nugget_work_get,
    nugget_work_hand_out,
)
from annotation.services import judge_for_assessor
from annotation.topic_work.services import topic_work_start
from annotation.typed import AuthenticatedRequest

IMPORTANCE_KEYS = [(NuggetImportance.VITAL.value, "Vital", "v"), (NuggetImportance.OKAY.value, "Okay", "o")]
SUPPORT_KEYS = [
    (NuggetSupport.SUPPORT.value, "Support", "s"),
    (NuggetSupport.PARTIAL.value, "Partial support", "p"),
    (NuggetSupport.NONE.value, "Not support", "n"),
]


def _owned(request: AuthenticatedRequest, work_id: int) -> TopicWork:
    try:
        return nugget_work_get(work_id=work_id, user=request.user)
    except TopicWork.DoesNotExist:
        raise Http404("no such nugget work") from None


@login_required
def work_list(request: AuthenticatedRequest) -> HttpResponse:
    collections = Collection.objects.order_by("name") if is_organiser(request.user) else []
    return render(
        request,
        "rag_nuggets/work_list.html",
        {"rows": selectors.nugget_work_of(user=request.user), "collections": collections},
    )


@login_required
def work_page(request: AuthenticatedRequest, work_id: int, index: int) -> HttpResponse:
    """Page `index` (from 1) of a piece of work: a turn's list or labels, or an answer's labels."""
    work = _owned(request, work_id)
    if work.kind == TopicWork.Kind.NUGGET_ASSIGNMENT:
        return _assignment_page(request, work, index)
    turns = selectors.work_turns(work)
    if not 1 <= index <= len(turns):
        raise Http404("no such turn")
    turn = turns[index - 1]
    nav = _nav(work, index, len(turns))
    if work.kind == TopicWork.Kind.NUGGET_EDIT:
        return _edit_page(request, work, turn, nav)
    return _importance_page(request, work, turn, nav)


def _nav(work: TopicWork, index: int, total: int) -> dict[str, Any]:
    return {
        "work": work,
        "index": index,
        "total": total,
        "previous_url": reverse("rag-nuggets-page", args=[work.id, index - 1]) if index > 1 else "",
        "next_url": reverse("rag-nuggets-page", args=[work.id, index + 1]) if index < total else "",
    }


def _done(request: HttpRequest, work: TopicWork, nav: dict[str, Any]) -> HttpResponse:
    if nav["next_url"]:
        return redirect(nav["next_url"])
    if work.completed_at is not None:
        messages.success(request, f"Topic {work.topic.number}: {work.get_kind_display().lower()} done.")
    return redirect("rag-nuggets-work")


def _edit_page(
    request: AuthenticatedRequest, work: TopicWork, turn: Turn, nav: dict[str, Any]
) -> HttpResponse:
    judge = judge_for_assessor(user=request.user)
    status, error = 200, ""
    if request.method == "POST":
        form = TimeForm(request.POST)
        if form.is_valid():
            try:
                nugget_edit_finish(
                    work=work,
                    user=request.user,
                    turn=turn,
                    last=not nav["next_url"],
                    time_spent_ms=form.cleaned_data["time_spent_ms"],
                )
            except NuggetWorkRefused as exc:
                error = str(exc)
            else:
                return _done(request, work, nav)
        else:
            error = "the time spent must be a whole number of milliseconds"
        status = 400
    topic_work_start(work=work)
    context = {
        **nav,
        "turn": turn,
        "nuggets": selectors.edit_list(judge=judge, turn=turn, source=selectors.work_source(work)),
        "passages": selectors.judged_passages(collection=work.topic.collection, turn=turn),
        "edits": selectors.edits_of(judge=judge, turn=turn).count(),
        "error": error,
    }
    return render(request, "rag_nuggets/edit.html", context, status=status)


def _labels_post(request: AuthenticatedRequest, allowed: list[str]) -> tuple[dict[int, str], int | None, str]:
    time_form = TimeForm(request.POST)
    if not time_form.is_valid():
        return {}, None, "the time spent must be a whole number of milliseconds"
    try:
        return posted_labels(request.POST, allowed), time_form.cleaned_data["time_spent_ms"], ""
    except ValidationError as exc:
        return {}, None, " ".join(exc.messages)


def _importance_page(
    request: AuthenticatedRequest, work: TopicWork, turn: Turn, nav: dict[str, Any]
) -> HttpResponse:
    status, error = 200, ""
    posted: dict[int, str] = {}
    if request.method == "POST":
        posted, spent, error = _labels_post(request, list(NuggetImportance.values))
        if not error:
            try:
                nugget_importance_submit(
                    work=work, user=request.user, turn=turn, labels=posted, time_spent_ms=spent
                )
            except NuggetWorkRefused as exc:
                error = str(exc)
            else:
                return _done(request, work, nav)
        status = 400
    topic_work_start(work=work)
    nuggets = selectors.nuggets_of(judge=selectors.work_source(work), turns=[turn])
    ids = [n.pk for n in nuggets]
    mine = selectors.importance_labels(judge=getattr(request.user, "judge", None), nugget_ids=ids)
    shown = selectors.importance_labels(judge=work.machine_judge, nugget_ids=ids)
    rows = [
        {
            "nugget": n,
            "shown": shown.get(n.pk, ""),
            "value": posted.get(n.pk) or mine.get(n.pk) or shown.get(n.pk, ""),
        }
        for n in nuggets
    ]
    context = {**nav, "turn": turn, "rows": rows, "choices": IMPORTANCE_KEYS, "error": error}
    return render(request, "rag_nuggets/importance.html", context, status=status)


def _assignment_page(request: AuthenticatedRequest, work: TopicWork, index: int) -> HttpResponse:
    answers = selectors.work_answers(work)
    if not 1 <= index <= len(answers):
        raise Http404("no such answer")
    answer = answers[index - 1]
    nav = _nav(work, index, len(answers))
    status, error = 200, ""
    posted: dict[int, str] = {}
    if request.method == "POST":
        posted, spent, error = _labels_post(request, list(NuggetSupport.values))
        if not error:
            try:
                nugget_assignment_page_submit(
                    work=work, user=request.user, response=answer, labels=posted, time_spent_ms=spent
                )
            except NuggetWorkRefused as exc:
                error = str(exc)
            else:
                return _done(request, work, nav)
        status = 400
    topic_work_start(work=work)
    nuggets = selectors.nuggets_of(judge=selectors.work_source(work), turns=[answer.turn_id])
    ids = [n.pk for n in nuggets]
    judge = getattr(request.user, "judge", None)
    mine = selectors.assignment_labels(judge=judge, response=answer, nugget_ids=ids)
    shown = selectors.assignment_labels(judge=work.machine_judge, response=answer, nugget_ids=ids)
    rows = [
        {
            "nugget": n,
            "shown": shown.get(n.pk, ""),
            "value": posted.get(n.pk) or mine.get(n.pk) or shown.get(n.pk, ""),
        }
        for n in nuggets
    ]
    context = {
        **nav,
        "answer": answer,
        "turn": answer.turn,
        "sentences": selectors.answer_sentences(answer),
        "rows": rows,
        "choices": SUPPORT_KEYS,
        "error": error,
    }
    return render(request, "rag_nuggets/assignment.html", context, status=status)


@organiser_required
def organise(request: HttpRequest, name: str) -> HttpResponse:
    """Hand out nugget work on a collection, and see each piece's progress and time per topic."""
    collection = get_object_or_404(Collection, name=name)
    status = 200
    if request.method == "POST":
        form = HandOutForm(request.POST, collection=collection)
        if form.is_valid():
            data = form.cleaned_data
            try:
                works = nugget_work_hand_out(
                    topics=list(data["topics"]),
                    users=list(data["users"]),
                    step=data["step"],
                    source_judge=data["source_judge"],
                    condition=data["condition"],
                    machine_judge=data["machine_judge"],
                )
            except NuggetWorkRefused as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"{len(works)} pieces of nugget work handed out.")
                return redirect("rag-nuggets-organise", name=collection.name)
        status = 400
    else:
        form = HandOutForm(collection=collection)
    rows = selectors.nugget_work_in(collection=collection)
    return render(
        request,
        "rag_nuggets/organise.html",
        {"collection": collection, "form": form, "rows": rows},
        status=status,
    )
