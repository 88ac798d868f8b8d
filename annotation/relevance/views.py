"""Pages where assessors grade pooled passages 0-4 and PTKB statements, and organisers hand out work.

Every unit is reached through the assessor who holds it (`slot_for_assessor`): another assessor's
unit is a 404, organiser pages are a 403 to assessors. Each passage screen is a plain form page that
works without JavaScript; with it, static/js/relevance.js stays on the page and goes on through the JSON
endpoints (annotation.relevance.api). Both call the same rules (annotation.relevance.work).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Exists, OuterRef, Q
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from annotation.judgments import JudgmentRefused
from annotation.models import (
    Assignment,
    Passage,
    Pool,
    PtkbStatement,
    RelevanceGrade,
    RelevanceJudgment,
    Turn,
    WorkSlot,
)
from annotation.permissions import organiser_required
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.relevance.forms import AssignmentForm, GradeForm, PtkbForm
from annotation.relevance.selectors import Step, assignment_progress, unit_progress, unit_steps
from annotation.relevance.work import (
    WorkRefused,
    assignments_for_assessor,
    slot_for_assessor,
    work_close,
    work_grade,
    work_lease,
    work_ptkb_submit,
)
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
        "judged": judged,
        "total": total,
        "turn_judged": sum(s.done for s in in_turn),
        "turn_total": len(in_turn),
    }


# --- Assessor pages --------------------------------------------------------------------------------


@login_required
def queue(request: AuthenticatedRequest) -> HttpResponse:
    """The assessor's assignments, the units they hold with judged / to judge per turn, and a way on."""
    judge = judge_for_assessor(user=request.user)
    now = timezone.now()
    rows = []
    for assignment in assignments_for_assessor(user=request.user):
        slots = (
            WorkSlot.objects.filter(unit__assignment=assignment, assessor=request.user)
            .select_related("unit", "unit__assignment")
            .order_by("completed_at", "unit__position")
        )
        units = [(slot, unit_progress(slot=slot, judge=judge)) for slot in slots]
        open_slot = next((slot for slot in slots if slot.completed_at is None), None)
        # Open copies of units this assessor has not held: free ones they may take now, and ones other
        # assessors hold under a lease (taken only if that lease runs out), as work_lease decides.
        not_mine = WorkSlot.objects.filter(assignment=assignment, completed_at__isnull=True).filter(
            ~Exists(WorkSlot.objects.filter(unit=OuterRef("unit"), assessor=request.user))
        )
        still_member = Exists(
            Assignment.assessors.through.objects.filter(
                assignment_id=OuterRef("assignment_id"), user_id=OuterRef("assessor_id")
            )
        )
        free = (
            not_mine.filter(Q(assessor__isnull=True) | Q(leased_until__lt=now) | ~still_member)
            .values("unit")
            .distinct()
            .count()
        )
        if open_slot is not None:
            state = "in progress"
        elif free:
            state = "next unit" if units else "not started"
        else:
            state = "waiting" if not_mine.exists() else "finished"
        rows.append(
            {
                "assignment": assignment,
                "units": units,
                "open": open_slot,
                "state": state,
                "units_done": sum(1 for slot in slots if slot.completed_at is not None),
                "units_free": free,
                "judged": sum(p.judged for _, p in units),
                "to_judge": sum(p.to_judge for _, p in units),
            }
        )
    return render(request, "relevance/queue.html", {"rows": rows})


@login_required
@require_POST
def next_unit(request: AuthenticatedRequest, assignment_pk: int) -> HttpResponse:
    """Lease the unit to work on (the open one, else a new one) and open its first unanswered screen."""
    assignment = get_object_or_404(assignments_for_assessor(user=request.user), pk=assignment_pk)
    slot = work_lease(assignment=assignment, user=request.user)
    if slot is None:
        messages.info(request, f"No more work in {assignment.name} for you: thank you.")
        return redirect("relevance-queue")
    return redirect("relevance-resume", slot_pk=slot.pk)


@login_required
def resume(request: AuthenticatedRequest, slot_pk: int) -> HttpResponse:
    slot = _slot_or_404(request, slot_pk)
    steps = unit_steps(slot=slot, judge=judge_for_assessor(user=request.user))
    return HttpResponseRedirect(_step_url(slot, _next_undone(steps, -1)))


@login_required
def passage(request: AuthenticatedRequest, slot_pk: int, turn_pk: int, index: int) -> HttpResponse:
    """Grade one pooled passage 0-4; the grade already given is shown and can be revised."""
    slot = _slot_or_404(request, slot_pk)
    judge = judge_for_assessor(user=request.user)
    steps = unit_steps(slot=slot, judge=judge)
    position = _position(steps, turn_pk, "passage", index)
    step = steps[position]
    assert step.entry is not None
    existing = RelevanceJudgment.objects.filter(
        judge=judge, turn_id=turn_pk, passage_id=step.entry.passage_id
    ).first()
    if request.method == "POST":
        form = GradeForm(request.POST)
        if form.is_valid():
            try:
                work_grade(
                    user=request.user,
                    slot_pk=slot.pk,
                    turn_pk=turn_pk,
                    passage_id=step.entry.passage_id,
                    grade=form.cleaned_data["grade"],
                    time_spent_ms=form.cleaned_data["time_spent_ms"],
                )
            except WorkRefused:  # the lease passed to someone else since the unit was read
                raise Http404("no such unit of yours") from None
            work_close(slot=slot, judge=judge)
            step.done = True
            return HttpResponseRedirect(_step_url(slot, _next_undone(steps, position)))
        status_code = 400
    else:
        form = GradeForm(initial={"grade": existing.grade} if existing else None)
        status_code = 200
    context = _context(slot, steps, position)
    context.update(
        {
            "form": form,
            "entry": step.entry,
            "index": index,
            "passage": Passage.objects.filter(
                collection_id=slot.unit.assignment.pool.collection_id, passage_id=step.entry.passage_id
            ).first(),
            "grades": GRADES,
            "current_grade": existing.grade if existing else None,
        }
    )
    return render(request, "relevance/passage.html", context, status=status_code)


@login_required
def ptkb(request: AuthenticatedRequest, slot_pk: int, turn_pk: int) -> HttpResponse:
    """Mark each PTKB statement relevant or not to the turn."""
    slot = _slot_or_404(request, slot_pk)
    judge = judge_for_assessor(user=request.user)
    steps = unit_steps(slot=slot, judge=judge)
    position = _position(steps, turn_pk, "ptkb")
    turn = steps[position].turn
    statements = list(PtkbStatement.objects.filter(topic_id=turn.topic_id))
    if request.method == "POST":
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
        status_code = 400
    else:
        given = dict(turn.ptkb_judgments.filter(judge=judge).values_list("statement_id", "relevant"))
        form = PtkbForm(initial={f"s{pk}": int(v) for pk, v in given.items()}, statements=statements)
        status_code = 200
    context = _context(slot, steps, position)
    context["form"] = form
    return render(request, "relevance/ptkb.html", context, status=status_code)


# --- Organiser page --------------------------------------------------------------------------------


@organiser_required
def organise(request: AuthenticatedRequest) -> HttpResponse:
    """Pools with their sizes, assignments with their progress, and a form to hand out a pool."""
    if request.method == "POST":
        form = AssignmentForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                assignment = assignment_create(
                    pool=data["pool"],
                    name=data["name"],
                    assessors=data["assessors"],
                    unit_kind=data["unit_kind"],
                    redundancy=data["redundancy"],
                    lease_minutes=data["lease_minutes"],
                    with_ptkb=data["with_ptkb"],
                )
            except AssignmentFailed as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Assignment {assignment.name} created.")
                return redirect("relevance-organise")
        status_code = 400
    else:
        form = AssignmentForm()
        status_code = 200
    pools = Pool.objects.select_related("collection", "filter_judge").annotate(
        size=Count("entries"), n_turns=Count("entries__turn", distinct=True)
    )
    progress = [
        assignment_progress(assignment=a)
        for a in Assignment.objects.select_related("pool", "pool__collection")
    ]
    return render(
        request,
        "relevance/organise.html",
        {"form": form, "pools": pools, "progress": progress},
        status=status_code,
    )
