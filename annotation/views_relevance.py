"""Pages where assessors grade pooled passages 0-4 and PTKB statements, and organisers hand out work.

Every unit is reached through the assessor who holds it (`slot_for_assessor`): another assessor's
unit is a 404, organiser pages are a 403 to assessors. A JSON pair of endpoints (next unit, submit)
serves scripted clients such as bench/bench_assessors.py; on PostgreSQL a token request there is
answered by one prepared SQL statement when it can be, by the DRF views otherwise (see the end).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from annotation.assignment import (
    AssignmentFailed,
    PairCheck,
    Step,
    assignment_create,
    assignment_progress,
    assignments_for_assessor,
    fast_advance,
    fast_grade_submit,
    fast_next_step,
    held_slot,
    next_passage_entry,
    pooled_pair_check,
    slot_complete_if_done,
    slot_for_assessor,
    slot_grade_submit,
    slot_ptkb_submit,
    unit_progress,
    unit_steps,
    work_lease,
)
from annotation.forms import AssignmentForm, GradeForm, PtkbForm
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
from annotation.services import judge_for_assessor, relevance_judgment_submit

# The iKAT relevance scale as assessors read it beside each grade.
GUIDELINES = {
    0: "The passage is off topic, or on topic but of no help in answering the utterance.",
    1: "The passage is on topic and holds some related information, but does not answer the utterance.",
    2: "The passage answers part of the utterance, or answers it with too little detail or explanation.",
    3: "The passage answers the utterance and stays on it, but misses some information or adds unrelated text.",
    4: "The passage answers the utterance completely and to the point; the user would need nothing else.",
}
GRADES = [(grade.value, grade.label, GUIDELINES[grade.value]) for grade in RelevanceGrade]


def _slot_or_404(request: HttpRequest, slot_pk: int) -> WorkSlot:
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
def queue(request: HttpRequest) -> HttpResponse:
    """The assessor's assignments, the units they hold with judged / to judge per turn, and a way on."""
    judge = judge_for_assessor(user=request.user)
    rows = []
    for assignment in assignments_for_assessor(user=request.user):
        slots = (
            WorkSlot.objects.filter(unit__assignment=assignment, assessor=request.user)
            .select_related("unit", "unit__assignment")
            .order_by("completed_at", "unit__position")
        )
        units = [(slot, unit_progress(slot=slot, judge=judge)) for slot in slots]
        rows.append(
            {
                "assignment": assignment,
                "units": units,
                "open": next((slot for slot in slots if slot.completed_at is None), None),
                "judged": sum(p.judged for _, p in units),
                "to_judge": sum(p.to_judge for _, p in units),
            }
        )
    return render(request, "relevance/queue.html", {"rows": rows})


@login_required
@require_POST
def next_unit(request: HttpRequest, assignment_pk: int) -> HttpResponse:
    """Lease the unit to work on (the open one, else a new one) and open its first unanswered screen."""
    assignment = get_object_or_404(assignments_for_assessor(user=request.user), pk=assignment_pk)
    slot = work_lease(assignment=assignment, user=request.user)
    if slot is None:
        messages.info(request, f"No more work in {assignment.name} for you: thank you.")
        return redirect("relevance-queue")
    return redirect("relevance-resume", slot_pk=slot.pk)


@login_required
def resume(request: HttpRequest, slot_pk: int) -> HttpResponse:
    slot = _slot_or_404(request, slot_pk)
    steps = unit_steps(slot=slot, judge=judge_for_assessor(user=request.user))
    return HttpResponseRedirect(_step_url(slot, _next_undone(steps, -1)))


@login_required
def passage(request: HttpRequest, slot_pk: int, turn_pk: int, index: int) -> HttpResponse:
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
            slot_grade_submit(
                slot=slot,
                judge=judge,
                entry=step.entry,
                grade=form.cleaned_data["grade"],
                time_spent_ms=form.cleaned_data["time_spent_ms"],
            )
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
def ptkb(request: HttpRequest, slot_pk: int, turn_pk: int) -> HttpResponse:
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
                slot_ptkb_submit(
                    slot=slot,
                    judge=judge,
                    turn=turn,
                    answers=form.answers(),
                    time_spent_ms=form.cleaned_data["time_spent_ms"],
                )
            except AssignmentFailed as exc:
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


def _organiser_required(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("organisers only")


@login_required
def organise(request: HttpRequest) -> HttpResponse:
    """Pools with their sizes, assignments with their progress, and a form to hand out a pool."""
    _organiser_required(request)
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


# --- JSON endpoints for scripted assessors ---------------------------------------------------------


class AssessorTokenAuthentication(TokenAuthentication):
    """DRF token authentication that loads the user's judge in the same query.

    Both endpoints need the judge on every request; joining it to the token lookup saves a query per
    request (`judge_for_assessor` reads the cached relation, and creates the judge on first use).
    """

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        token = Token.objects.select_related("user", "user__judge").filter(key=key).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token


class AssessorTokenScheme(OpenApiAuthenticationExtension):
    """The schema's name for it: the same `Authorization: Token <key>` header as tokenAuth."""

    target_class = AssessorTokenAuthentication
    name = "assessorTokenAuth"

    def get_security_definition(self, auto_schema: object) -> dict:
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")


# Token first: a scripted client's request then never touches the session machinery.
ASSESSOR_API_AUTHENTICATION = [AssessorTokenAuthentication, SessionAuthentication]


class NextUnitOutput(serializers.Serializer):
    slot = serializers.IntegerField()
    unit = serializers.CharField()
    turn_id = serializers.CharField()
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField()
    text = serializers.CharField(allow_blank=True)


class GradeInput(serializers.Serializer):
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField(max_length=255)
    grade = serializers.ChoiceField(choices=RelevanceGrade.choices)
    time_spent_ms = serializers.IntegerField(
        min_value=0, max_value=86_400_000, required=False, allow_null=True
    )


class NextUnitApi(APIView):
    """POST: lease work in an assignment and get the next passage to grade; 204 when none is left.

    A held unit whose passages are all graded is closed here (SubmitGradeApi leaves that to this call);
    if its PTKB step is not done the answer is 409 with the page that asks for it (the JSON client
    grades passages only). Three queries in the steady state: token with judge, held copy, next entry.
    """

    authentication_classes = ASSESSOR_API_AUTHENTICATION

    @extend_schema(
        request=None,
        responses={
            200: NextUnitOutput,
            204: OpenApiResponse(description="No work left in this assignment."),
            409: OpenApiResponse(
                description="Only the PTKB step of the held unit is left; do it on the page."
            ),
        },
    )
    def post(self, request: Request, assignment_pk: int) -> ApiResponse:
        judge = judge_for_assessor(user=request.user)
        # The unit already held needs no membership check: only members are ever handed units.
        slot = held_slot(assignment_pk=assignment_pk, user=request.user)
        assignment = slot.unit.assignment if slot is not None else None
        while True:
            if slot is None:
                if assignment is None:
                    assignment = get_object_or_404(
                        assignments_for_assessor(user=request.user), pk=assignment_pk
                    )
                slot = work_lease(assignment=assignment, user=request.user)
                if slot is None:
                    return ApiResponse(status=status.HTTP_204_NO_CONTENT)
            entry = next_passage_entry(slot=slot, judge=judge, with_text=True)
            if entry is not None:
                break
            if not slot_complete_if_done(slot=slot, judge=judge, passages_done=True):
                return ApiResponse(
                    {
                        "slot": slot.pk,
                        "detail": "only the PTKB step is left",
                        "url": reverse("relevance-resume", args=[slot.pk]),
                    },
                    status=status.HTTP_409_CONFLICT,
                )
            slot = None
        payload = {
            "slot": slot.pk,
            "unit": slot.unit.label,
            "turn_id": entry.turn.turn_id,
            "turn_pk": entry.turn_id,
            "passage_id": entry.passage_id,
            "text": entry.text or "",
        }
        return ApiResponse(NextUnitOutput(payload).data)


class GradeOutput(serializers.Serializer):
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField()
    grade = serializers.IntegerField()


class SubmitGradeApi(APIView):
    """POST: grade (or regrade) a passage of a unit the caller holds.

    The unit is not closed here: the next call to NextUnitApi closes it when it finds nothing left,
    which saves that check on every grade.
    """

    authentication_classes = ASSESSOR_API_AUTHENTICATION

    @extend_schema(request=GradeInput, responses={201: GradeOutput})
    def post(self, request: Request, slot_pk: int) -> ApiResponse:
        payload = GradeInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        check = pooled_pair_check(
            user=request.user, slot_pk=slot_pk, turn_pk=data["turn_pk"], passage_id=data["passage_id"]
        )
        if check is PairCheck.NOT_YOUR_UNIT:
            raise Http404("no such unit of yours")
        if check is PairCheck.NOT_POOLED:
            return ApiResponse(
                {"passage_id": ["this passage is not pooled for a turn of your unit"]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        judgment = relevance_judgment_submit(
            judge=judge_for_assessor(user=request.user),
            turn=data["turn_pk"],
            passage_id=data["passage_id"],
            grade=data["grade"],
            time_spent_ms=data.get("time_spent_ms"),
        )
        return ApiResponse(
            GradeOutput(
                {"turn_pk": judgment.turn_id, "passage_id": judgment.passage_id, "grade": judgment.grade}
            ).data,
            status=status.HTTP_201_CREATED,
        )


# --- The same two endpoints' fast path (PostgreSQL, token) -------------------------------------------
#
# A token-authenticated POST on PostgreSQL is answered by one SQL statement (annotation.assignment's
# fast_next_step / fast_grade_submit; fast_advance once per unit) and a plain Django response: no DRF
# request, content negotiation, serializer or ORM query building, which cost far more CPU than the
# statement itself. Whatever that path cannot answer with certainty (no or bad token, session auth, a
# body the plain checks below do not accept, no judge yet, not a member, a PTKB step left, no work left,
# not your unit, not pooled) goes to the DRF views above, which give every answer, error and side
# effect as before. CSRF does not apply to a
# token request (no cookie is trusted); a session request still meets DRF's CSRF check.

_MAX_PK = 2**31 - 1
_MAX_TIME_SPENT_MS = 86_400_000


def _token_key(request: HttpRequest) -> str | None:
    """The key of an `Authorization: Token <key>` header, as DRF's TokenAuthentication reads it."""
    parts = request.META.get("HTTP_AUTHORIZATION", "").split()
    if len(parts) != 2 or parts[0].lower() != "token":
        return None
    return parts[1]


def _json(payload: dict, status_code: int) -> HttpResponse:
    # DRF's JSONRenderer output: compact, UTF-8.
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return HttpResponse(body, status=status_code, content_type="application/json")


def _plain_int(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _grade_body(request: HttpRequest) -> tuple[int, str, int, int | None] | None:
    """(turn_pk, passage_id, grade, time_spent_ms) when GradeInput would accept the body unchanged.

    Anything else (strings for numbers, whitespace to trim, other content types) goes to GradeInput.
    """
    if request.content_type != "application/json":
        return None
    try:
        data = json.loads(request.body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    turn_pk, passage_id, grade = data.get("turn_pk"), data.get("passage_id"), data.get("grade")
    time_spent_ms = data.get("time_spent_ms")
    if not (_plain_int(turn_pk, 1, _MAX_PK) and _plain_int(grade, 0, 4)):
        return None
    if not isinstance(passage_id, str) or not 0 < len(passage_id) <= 255:
        return None
    if passage_id != passage_id.strip() or "\x00" in passage_id:
        return None
    if time_spent_ms is not None and not _plain_int(time_spent_ms, 0, _MAX_TIME_SPENT_MS):
        return None
    return turn_pk, passage_id, grade, time_spent_ms


def _next_fast(request: HttpRequest, key: str, assignment_pk: int) -> HttpResponse | None:
    step = fast_next_step(token_key=key, assignment_pk=assignment_pk)
    if step is None and fast_advance(token_key=key, assignment_pk=assignment_pk) is not None:
        # The held unit was finished (now closed) or none was held: ask again in the claimed one.
        step = fast_next_step(token_key=key, assignment_pk=assignment_pk)
    if step is None:
        return None
    payload = {
        "slot": step.slot,
        "unit": step.unit,
        "turn_id": step.turn_id,
        "turn_pk": step.turn_pk,
        "passage_id": step.passage_id,
        "text": step.text,
    }
    return _json(payload, 200)


def _grade_fast(request: HttpRequest, key: str, slot_pk: int) -> HttpResponse | None:
    body = _grade_body(request)
    if body is None:
        return None
    turn_pk, passage_id, grade, time_spent_ms = body
    row = fast_grade_submit(
        token_key=key,
        slot_pk=slot_pk,
        turn_pk=turn_pk,
        passage_id=passage_id,
        grade=grade,
        time_spent_ms=time_spent_ms,
    )
    if row is None:
        return None
    return _json({"turn_pk": row[0], "passage_id": row[1], "grade": row[2]}, 201)


def _with_fast_path(
    api: type[APIView], fast: Callable[..., HttpResponse | None]
) -> Callable[..., HttpResponseBase]:
    """`api`'s view, answering token POSTs on PostgreSQL through `fast` when it can."""
    slow = api.as_view()

    @csrf_exempt
    def view(request: HttpRequest, **kwargs: int) -> HttpResponseBase:
        if request.method == "POST" and connection.vendor == "postgresql":
            key = _token_key(request)
            if key is not None and all(0 < value <= _MAX_PK for value in kwargs.values()):
                response = fast(request, key, **kwargs)
                if response is not None:
                    return response
        return slow(request, **kwargs)

    # The schema generator (drf-spectacular) reads the DRF view class from these, as from as_view().
    view.cls = slow.cls  # type: ignore[attr-defined]
    view.initkwargs = slow.initkwargs  # type: ignore[attr-defined]
    view.__doc__ = api.__doc__
    return view


next_unit_api = _with_fast_path(NextUnitApi, _next_fast)
submit_grade_api = _with_fast_path(SubmitGradeApi, _grade_fast)
