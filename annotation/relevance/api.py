"""The assessor JSON endpoints: next passage and grade, for the page's script and scripted clients."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from annotation.judgments import relevance_judgment_submit
from annotation.models import (
    RelevanceGrade,
)
from annotation.relevance.fast_sql import fast_advance, fast_grade_submit, fast_next_step
from annotation.relevance.work import (
    PairCheck,
    assignments_for_assessor,
    held_slot,
    next_passage_entry,
    pooled_pair_check,
    slot_complete_if_done,
    work_lease,
)
from annotation.services import judge_for_assessor

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
