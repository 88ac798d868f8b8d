"""Pages of the support assessment: assessors judge units of their assignments; organisers assign
conditions. The leaderboard and the disagreement report are measures: judging.support.views."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.models import (
    Collection,
    Condition,
    Judge,
    Passage,
    SupportJudgment,
    SupportLabel,
    TopicWork,
)
from annotation.permissions import is_organiser, organiser_required
from annotation.selectors import UnknownTopics, topics_named
from annotation.support.services import (
    GUIDELINE,
    LABELS,
    SupportConflict,
    SupportSwitchUnconfirmed,
    assignment_unit_keys,
    labels_by_unit,
    post_edit_judges,
    support_assignment_get,
    support_assignment_set,
    support_assignments_of,
    support_judgment_submit,
    support_unit_get,
)
from annotation.typed import AuthenticatedRequest, choice_field
from core.pagination import page_of

ASSIGNMENTS_PER_PAGE = 50


class SupportLabelForm(forms.Form):
    label = forms.ChoiceField(choices=SupportLabel.choices, widget=forms.RadioSelect)
    time_spent_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False)


def _owned_assignment(request: AuthenticatedRequest, assignment_id: int) -> TopicWork:
    try:
        return support_assignment_get(assignment_id=assignment_id, user=request.user)
    except TopicWork.DoesNotExist:
        raise Http404("no such assignment") from None


def _first_unlabelled(assignment: TopicWork, judge: Judge | None) -> int:
    """The position (from 1) of the first unit the assessor has not labelled, 1 when all are."""
    keys = assignment_unit_keys(assignment)
    mine = labels_by_unit(judge=judge, sentence_ids={sid for sid, _ci in keys}) if judge else {}
    return next((i for i, key in enumerate(keys, start=1) if key not in mine), 1)


@login_required
def support_assignments(request: AuthenticatedRequest) -> HttpResponse:
    """The assessor's support assignments, each opening at its first unit still to label."""
    collections = Collection.objects.all() if is_organiser(request.user) else Collection.objects.none()
    judge = Judge.objects.filter(user=request.user).first()
    rows = [
        {
            "assignment": row.assignment,
            "total": row.total,
            "done": row.done,
            "complete": row.complete,
            # Only a partly labelled assignment needs the look-up: a new one starts, a finished one is
            # reviewed, both at unit 1.
            "position": _first_unlabelled(row.assignment, judge) if 0 < row.done < row.total else 1,
        }
        for row in support_assignments_of(user=request.user)
    ]
    return render(request, "support/assignments.html", {"rows": rows, "collections": collections})


@login_required
def support_unit(request: AuthenticatedRequest, assignment_id: int, position: int) -> HttpResponse:
    assignment = _owned_assignment(request, assignment_id)
    # Every unit's key, and the one unit shown read whole.
    keys = assignment_unit_keys(assignment)
    if not 1 <= position <= len(keys):
        raise Http404("no such unit")
    unit = support_unit_get(keys[position - 1])
    judge = Judge.objects.filter(user=request.user).first()
    mine = labels_by_unit(judge=judge, sentence_ids={sid for sid, _ci in keys}) if judge else {}
    current = mine.get(unit.key)

    status = 200
    if request.method == "POST":
        form = SupportLabelForm(request.POST)
        if form.is_valid():
            try:
                support_judgment_submit(
                    assignment=assignment,
                    user=request.user,
                    sentence=unit.sentence,
                    citation_index=unit.citation_index,
                    label=form.cleaned_data["label"],
                    time_spent_ms=form.cleaned_data["time_spent_ms"],
                )
            except SupportConflict as exc:
                form.add_error(None, str(exc))
            else:
                if position < len(keys):
                    return redirect("support-unit", assignment_id=assignment.id, position=position + 1)
                messages.success(request, f"Topic {assignment.topic.number}: all units judged.")
                return redirect("support-assignments")
        status = 400

    shown = ""
    if assignment.condition == Condition.POST_EDIT:
        if current is not None:
            shown = current.shown_label
        else:
            machine = SupportJudgment.objects.filter(
                judge=assignment.machine_judge, sentence=unit.sentence, citation_index=unit.citation_index
            ).first()
            shown = machine.label if machine else ""
    if request.method != "POST":
        initial = current.label if current is not None else shown
        form = SupportLabelForm(initial={"label": initial} if initial else {})

    sentences = list(unit.sentence.response.sentences.all())
    passage = Passage.objects.filter(
        collection=assignment.topic.collection, passage_id=unit.passage_id
    ).first()
    context = {
        "assignment": assignment,
        "unit": unit,
        "position": position,
        "total": len(keys),
        "done": sum(1 for key in keys if key in mine),
        "current": current,
        "shown_label": shown,
        "shown_label_display": SupportLabel(shown).label if shown else "",
        "sentences": sentences,
        "passage": passage,
        "form": form,
        "guideline": GUIDELINE,
        "labels": [(value, SupportLabel(value).label, i) for i, value in enumerate(LABELS, start=1)],
        "previous_url": reverse("support-unit", args=[assignment.id, position - 1]) if position > 1 else "",
        "next_url": reverse("support-unit", args=[assignment.id, position + 1])
        if position < len(keys)
        else "",
    }
    return render(request, "support/unit.html", context, status=status)


class AssignForm(forms.Form):
    # Typed, not chosen from a menu of every topic: a track has hundreds (`TopicNumbersField`).
    topic = forms.CharField(max_length=64, help_text="The topic's number.")
    assessor = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username")
    )
    condition = forms.ChoiceField(
        choices=[
            (Condition.SCRATCH, "From scratch"),
            (Condition.POST_EDIT, "Post-editing"),
        ]
    )
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        required=False,
        help_text="Post-editing: the machine judge whose support labels on this collection are shown.",
    )
    max_citations = forms.IntegerField(min_value=1, max_value=20, initial=1)
    # Sent only by the confirm step the page shows when assigning would switch a condition.
    switch = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        self.collection = collection
        # Only a machine judge with support labels here has labels to show; a relevance judge has none.
        choice_field(self, "machine_judge").queryset = post_edit_judges(collection=collection)

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if data.get("condition") == Condition.POST_EDIT and not data.get("machine_judge"):
            self.add_error("machine_judge", "Post-editing needs the machine judge whose labels are shown.")
        if "topic" in data:
            try:
                data["topic"] = topics_named(collection=self.collection, numbers=[data["topic"]])[0]
            except UnknownTopics as exc:
                self.add_error("topic", str(exc))
        return data


@organiser_required
def support_organise(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    status = 200
    switch: dict[str, str] = {}
    if request.method == "POST":
        form = AssignForm(request.POST, collection=collection)
        if form.is_valid():
            data = form.cleaned_data
            try:
                support_assignment_set(
                    topic=data["topic"],
                    user=data["assessor"],
                    condition=data["condition"],
                    machine_judge=data["machine_judge"],
                    max_citations=data["max_citations"],
                    switch=data["switch"],
                )
            except SupportSwitchUnconfirmed as exc:
                # The confirm step posts the same choices again, with the switch confirmed.
                switch = {"reason": str(exc), "condition": data["condition"]}
                form.add_error(None, str(exc))
            except SupportConflict as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Assignment saved.")
                return redirect("support-organise", name=collection.name)
        status = 400
    else:
        form = AssignForm(collection=collection)
    # A page of the assignments at a time: a track's topics times its assessors is a long table.
    assignments = page_of(
        request,
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, topic__collection=collection)
        .select_related("topic", "user", "machine_judge")
        .order_by("topic__number", "user__username", "pk"),
        param="page",
        anchor="support-assignments",
        per_page=ASSIGNMENTS_PER_PAGE,
    )
    return render(
        request,
        "support/organise.html",
        {
            "collection": collection,
            "form": form,
            "assignments": assignments.page.object_list,
            "assignment_pages": assignments,
            "has_topics": collection.topics.exists(),
            "switch": switch,
            "posted": [(k, v) for k, v in request.POST.items() if k not in ("csrfmiddlewaretoken", "switch")],
        },
        status=status,
    )
