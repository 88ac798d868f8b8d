"""Pages where assessors grade pooled passages 0-4 and PTKB statements, and organisers hand out work.

Every unit is reached through the assessor who holds it (`slot_for_assessor`): another assessor's
unit is a 404, organiser pages are a 403 to assessors. Each passage screen is a plain form page that
works without JavaScript; with it, static/js/relevance.js stays on the page and goes on through the JSON
endpoints (annotation.relevance.api). Both call the same rules (annotation.relevance.services).
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    Collection,
    Passage,
    PtkbStatement,
    RelevanceGrade,
    Turn,
    WorkSlot,
)
from annotation.permissions import organiser_required
from annotation.relevance.forms import GradeForm, PtkbForm
from annotation.relevance.selectors import Step, assessor_queue, unit_steps
from annotation.relevance.services import (
    WorkRefused,
    assignments_for_assessor,
    slot_for_assessor,
    work_close,
    work_grade,
    work_next,
    work_ptkb_submit,
)
from annotation.selectors import assessor_judge
from annotation.services import judge_for_assessor
from annotation.typed import AuthenticatedRequest

# The iKAT relevance scale as assessors read it beside each grade.
GUIDELINES = {
    0: "The passage is off topic, or on topic but of no help in answering the utterance.",
    1: "The passage is on topic and holds some related information, but does not answer the utterance.",
    2: "The passage answers part of the utterance, or answers it with too little detail or explanation.",
    3: "The passage answers the utterance and stays on it, but misses some information or adds unrelated text.",
    4: "The passage answers the utterance completely and to the point; the user would need nothing else.",
}
GRADES = [(grade.value, grade.label, GUIDELINES[grade.value]) for grade in RelevanceGrade]


def _slot_or_404(request: AuthenticatedRequest, slot_pk: int) -> WorkSlot:
    slot = slot_for_assessor(user=request.user, slot_pk=slot_pk)
    if slot is None:
        raise Http404("no such unit of yours")
    return slot


def _step_url(slot: WorkSlot, step: Step | None) -> str:
    if step is None:
        return reverse("relevance-queue")
    if step.kind == "ptkb":
        return reverse("relevance-ptkb", args=[slot.pk, step.turn.pk])
    return reverse("relevance-passage", args=[slot.pk, step.turn.pk, step.index])


def _next_undone(steps: list[Step], after: int) -> Step | None:
    """The first unanswered screen after position `after`, else the first anywhere, else None."""
    for step in steps[after + 1 :] + steps[: after + 1]:
        if not step.done:
            return step
    return None


def _position(steps: list[Step], turn_pk: int, kind: str, index: int = 0) -> int:
    for position, step in enumerate(steps):
        if step.turn.pk == turn_pk and step.kind == kind and step.index == index:
            return position
    raise Http404("no such screen in this unit")


def _context(slot: WorkSlot, steps: list[Step], position: int) -> dict:
    step = steps[position]
    turn = step.turn
    earlier = Turn.objects.filter(topic_id=turn.topic_id, position__lt=turn.position).order_by("position")
    judged = sum(s.done for s in steps if s.kind == "passage")
    total = sum(1 for s in steps if s.kind == "passage")
    in_turn = [s for s in steps if s.turn.pk == turn.pk and s.kind == "passage"]
    return {
        "slot": slot,
        "unit": slot.unit,
        "turn": turn,
        "earlier": earlier,
        "ptkb": PtkbStatement.objects.filter(topic_id=turn.topic_id),
        "back_url": _step_url(slot, steps[position - 1]) if position > 0 else "",
        # The screen's own address: a screen opened through the unit's resume URL posts and reloads here.
        "step_url": _step_url(slot, step),
        "judged": judged,
        "total": total,
        "turn_judged": sum(s.done for s in in_turn),
        "turn_total": len(in_turn),
    }


# --- Assessor pages --------------------------------------------------------------------------------


@login_required
def queue(request: AuthenticatedRequest) -> HttpResponse:
    """The assessor's assignments, the units they hold with judged / to judge per turn, and a way on."""
    rows = assessor_queue(user=request.user, judge=assessor_judge(request.user))
    return render(request, "relevance/queue.html", {"rows": rows})


@login_required
@require_POST
def next_unit(request: AuthenticatedRequest, assignment_pk: int) -> HttpResponse:
    """Open the unit to work on (the held one, else a new one) at its first unanswered screen.

    Through work_next, as the JSON API's next call: a held unit with every screen answered is closed on
    the way and the next one leased, so the queue never offers a unit with nothing left in it.
    """
    try:
        step = work_next(user=request.user, assignment_pk=assignment_pk)
    except WorkRefused:
        raise Http404("no such assignment of yours") from None
    if step.slot_pk is None:
        assignment = assignments_for_assessor(user=request.user).get(pk=assignment_pk)
        messages.info(request, f"No more work in {assignment.name} for you: thank you.")
        return redirect("relevance-queue")
    return redirect("relevance-resume", slot_pk=step.slot_pk)


@login_required
def resume(request: AuthenticatedRequest, slot_pk: int) -> HttpResponse:
    """The unit's first unanswered screen, shown here rather than behind a redirect (one request per
    unit opened); back to the queue once every screen is answered."""
    slot = _slot_or_404(request, slot_pk)
    steps = unit_steps(slot=slot, judge=assessor_judge(request.user))
    step = _next_undone(steps, -1)
    if step is None:
        return redirect("relevance-queue")
    position = steps.index(step)
    if step.kind == "ptkb":
        return _ptkb_page(request, slot, steps, position)
    return _passage_page(request, slot, steps, position)


@login_required
def passage(request: AuthenticatedRequest, slot_pk: int, turn_pk: int, index: int) -> HttpResponse:
    """Grade one pooled passage 0-4; the grade already given is shown and can be revised."""
    slot = _slot_or_404(request, slot_pk)
    if request.method != "POST":
        steps = unit_steps(slot=slot, judge=assessor_judge(request.user))
        return _passage_page(request, slot, steps, _position(steps, turn_pk, "passage", index))
    judge = judge_for_assessor(user=request.user)
    steps = unit_steps(slot=slot, judge=judge)
    position = _position(steps, turn_pk, "passage", index)
    step = steps[position]
    assert step.entry is not None
    form = GradeForm(request.POST)
    if not form.is_valid():
        return _passage_page(request, slot, steps, position, form=form, status=400)
    try:
        work_grade(
            user=request.user,
            slot_pk=slot.pk,
            turn_pk=turn_pk,
            passage_id=step.entry.passage_id,
            grade=form.cleaned_data["grade"],
            time_spent_ms=form.cleaned_data["time_spent_ms"],
            key=form.cleaned_data["grade_key"],
        )
    except WorkRefused:  # the lease passed to someone else since the unit was read
        raise Http404("no such unit of yours") from None
    step.done = True
    after = _next_undone(steps, position)
    if after is None:  # every screen answered, as read: work_close checks that again before closing
        work_close(slot=slot, judge=judge)
    return HttpResponseRedirect(_step_url(slot, after))


def _passage_page(
    request: AuthenticatedRequest,
    slot: WorkSlot,
    steps: list[Step],
    position: int,
    *,
    form: GradeForm | None = None,
    status: int = 200,
) -> HttpResponse:
    step = steps[position]
    assert step.entry is not None
    context = _context(slot, steps, position)
    context.update(
        {
            "form": form or GradeForm(initial={"grade": step.grade, "grade_key": uuid.uuid4()}),
            "entry": step.entry,
            "index": step.index,
            "passage": Passage.objects.filter(
                collection_id=slot.unit.assignment.pool.collection_id, passage_id=step.entry.passage_id
            ).first(),
            "grades": GRADES,
            "current_grade": step.grade,
        }
    )
    return render(request, "relevance/passage.html", context, status=status)


@login_required
def ptkb(request: AuthenticatedRequest, slot_pk: int, turn_pk: int) -> HttpResponse:
    """Mark each PTKB statement relevant or not to the turn."""
    slot = _slot_or_404(request, slot_pk)
    if request.method != "POST":
        steps = unit_steps(slot=slot, judge=assessor_judge(request.user))
        return _ptkb_page(request, slot, steps, _position(steps, turn_pk, "ptkb"))
    judge = judge_for_assessor(user=request.user)
    steps = unit_steps(slot=slot, judge=judge)
    position = _position(steps, turn_pk, "ptkb")
    turn = steps[position].turn
    statements = list(PtkbStatement.objects.filter(topic_id=turn.topic_id))
    form = PtkbForm(request.POST, statements=statements)
    if form.is_valid():
        try:
            work_ptkb_submit(
                slot=slot,
                judge=judge,
                turn=turn,
                answers=form.answers(),
                time_spent_ms=form.cleaned_data["time_spent_ms"],
            )
        except JudgmentRefused as exc:
            form.add_error(None, str(exc))
        else:
            steps[position].done = True
            return HttpResponseRedirect(_step_url(slot, _next_undone(steps, position)))
    return _ptkb_page(request, slot, steps, position, form=form, status=400)


def _ptkb_page(
    request: AuthenticatedRequest,
    slot: WorkSlot,
    steps: list[Step],
    position: int,
    *,
    form: PtkbForm | None = None,
    status: int = 200,
) -> HttpResponse:
    turn = steps[position].turn
    if form is None:
        judge = assessor_judge(request.user)
        given = (
            dict(turn.ptkb_judgments.filter(judge=judge).values_list("statement_id", "relevant"))
            if judge is not None
            else {}
        )
        statements = list(PtkbStatement.objects.filter(topic_id=turn.topic_id))
        form = PtkbForm(initial={f"s{pk}": int(v) for pk, v in given.items()}, statements=statements)
    context = _context(slot, steps, position)
    context["form"] = form
    return render(request, "relevance/ptkb.html", context, status=status)


# --- Organiser page --------------------------------------------------------------------------------


@organiser_required
def organise(request: AuthenticatedRequest) -> HttpResponse:
    """The old address of the organiser's relevance page. Relevance work is handed out on one page, each
    collection's work page in the console: this sends there (to the collections list when several)."""
    names = list(Collection.objects.order_by("name").values_list("name", flat=True)[:2])
    if len(names) == 1:
        return redirect("console-work", name=names[0])
    return redirect("home")
