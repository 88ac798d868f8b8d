"""The assessor JSON endpoints, next passage and grade: the assessor page's script and scripted clients.

DRF views like the rest of the API (annotation/api/): in its schema, answering refusals in its one error
shape (core/api_errors.py). Both call the relevance work rules (annotation.relevance.services) and nothing
else. The page signs in with its session (and sends the CSRF token in the X-CSRFToken header); scripts
send `Authorization: Token <key>`, tried first so that a script's request never touches the session.
They are most of the requests of a campaign, one or two per judgment, so each view keeps to what it
needs: JSON only, the per-user throttle for scripts only, since the page's pace is a person's, like every
other page of the site, and the user of a recent request taken from memory and checked by the work's
own statement (core.remembered), which docs/performance.md measures.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import RelevanceGrade, Turn, WorkSlot
from annotation.relevance.forms import MAX_TIME_SPENT_MS
from annotation.relevance.grade_sql import NextPassage
from annotation.relevance.services import NextKind, NotPooled, WorkRefused, work_grade, work_next
from core.api_input import IntegerField
from core.idempotency import IDEMPOTENCY_KEY, idempotency_key
from core.json_body import StrictBodies
from core.remembered import (
    RecheckedSessionAuthentication,
    RecheckedTokenAuthentication,
    Remembered,
    RememberRefused,
)
from core.throttling import ScriptFixedWindowThrottle


class RelevanceNextInput(serializers.Serializer):
    slot = IntegerField(
        column=WorkSlot._meta.pk,
        min_value=1,
        required=False,
        allow_null=True,
        help_text="Stay on this unit (as the assessor page does): 204 once it is complete.",
    )


class RelevancePassageOutput(serializers.Serializer):
    slot = serializers.IntegerField(help_text="Your copy of the unit: grade through it.")
    unit = serializers.CharField()
    turn_id = serializers.CharField()
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField()
    index = serializers.IntegerField(help_text="The passage's place in its turn, from 0.")
    title = serializers.CharField()
    text = serializers.CharField(help_text="Empty when the collection lacks it.")
    url = serializers.CharField(help_text="The same passage on the assessor page.")


class RelevanceGradeInput(serializers.Serializer):
    turn_pk = IntegerField(column=Turn._meta.pk)
    passage_id = serializers.CharField(max_length=255)
    grade = serializers.ChoiceField(choices=RelevanceGrade.choices)
    time_spent_ms = serializers.IntegerField(
        min_value=0, max_value=MAX_TIME_SPENT_MS, required=False, allow_null=True
    )
    next = serializers.BooleanField(
        default=False, help_text="Answer with the unit's next passage too (one request per judgment)."
    )


class RelevanceGradeOutput(serializers.Serializer):
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField()
    grade = serializers.IntegerField()
    next = RelevancePassageOutput(
        required=False, allow_null=True, help_text='With "next": null when none is left.'
    )
    unit_complete = serializers.BooleanField(
        required=False,
        help_text='With "next": the unit is closed (false while a passage or PTKB step is left).',
    )


class PtkbLeft(exceptions.APIException):
    """Only the PTKB step of the unit is left: the JSON client grades passages only."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "only the PTKB step is left"
    default_code = "ptkb_left"

    def __init__(self, slot_pk: int) -> None:
        super().__init__()
        self.context = {"slot": slot_pk, "url": reverse("relevance-resume", args=[slot_pk])}


def _passage(passage: NextPassage) -> dict[str, Any]:
    # Built as RelevancePassageOutput declares it: a serializer's field machinery per judgment costs more than
    # the work's statement, and what it would check is typed here already.
    return {
        "slot": passage.slot_pk,
        "unit": passage.unit,
        "turn_id": passage.turn_id,
        "turn_pk": passage.turn_pk,
        "passage_id": passage.passage_id,
        "index": passage.index,
        "title": passage.title,
        "text": passage.text,
        "url": reverse("relevance-passage", args=[passage.slot_pk, passage.turn_pk, passage.index]),
    }


class _AssessorView(StrictBodies):
    # A script's token is tried first, so that its request never touches the session.
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ScriptFixedWindowThrottle]
    renderer_classes = [JSONRenderer]
    # Users taken from memory (core.remembered); bench/bench_assessors.py measures the views without it.
    remember_users = True

    def get_authenticators(self) -> list[BaseAuthentication]:
        # The work statements check a user taken from memory themselves, in the same round trip
        # (core.remembered). To the schema (drf-spectacular's fake view) these are DRF's usual two.
        if self.remember_users and not getattr(self, "swagger_fake_view", False):
            return [RecheckedTokenAuthentication(), RecheckedSessionAuthentication()]
        return super().get_authenticators()

    def remembered(self, request: Request) -> Remembered | None:
        """The user as remembered, when the request's user came from memory: the work checks it."""
        # What authenticated the request, if that has been done: the property would authenticate now.
        authenticator = getattr(request, "_authenticator", None)
        return getattr(authenticator, "remembered", None)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        response._csp_exempt = True  # JSON is never rendered as a page: no policy header (django-csp)
        return response

    def handle_exception(self, exc: Exception) -> Response:
        remembered = self.remembered(self.request)
        # Refusals the work raised come after its statement checked the user (or rechecked them when it
        # found nothing); the rest come before it, where a key revoked or a session voided since its user
        # was remembered must still be answered first, as without the memory.
        checked = RememberRefused | WorkRefused | NotPooled | PtkbLeft
        if remembered is not None and not isinstance(
            exc, checked | exceptions.NotAuthenticated | exceptions.AuthenticationFailed
        ):
            try:
                remembered.recheck()
            except RememberRefused as refused:
                exc = refused
        if isinstance(exc, RememberRefused):
            exc = exceptions.AuthenticationFailed(str(exc)) if exc.token else exceptions.NotAuthenticated()
        elif isinstance(exc, WorkRefused):
            exc = exceptions.NotFound(str(exc))
        elif isinstance(exc, NotPooled):
            exc = exceptions.ValidationError({"passage_id": [str(exc)]})
        return super().handle_exception(exc)


class NextPassageApi(_AssessorView):
    @extend_schema(
        operation_id="relevance_next",
        request=RelevanceNextInput,
        responses={
            200: RelevancePassageOutput,
            204: OpenApiResponse(
                description="No work left for you in the assignment (or in the unit asked for)."
            ),
            404: OpenApiResponse(description="Not an assessor of the assignment, or not your unit."),
            409: OpenApiResponse(
                description="Only the unit's PTKB step is left: `slot` and `url` name its page."
            ),
        },
    )
    def post(self, request: Request, assignment_pk: int) -> Response:
        """Lease work in an assignment and get the next passage to grade; 204 when none is left.

        With `slot`, stays on that unit and answers 204 once it is complete, instead of closing it and
        leasing the next. A held unit whose screens are all answered is closed here (grading leaves that
        to this call) and the next one leased.
        """
        payload = RelevanceNextInput(data=request.data)
        payload.is_valid(raise_exception=True)
        user: User = request.user  # type: ignore[assignment]  # IsAuthenticated
        step = work_next(
            user=user,
            assignment_pk=assignment_pk,
            slot_pk=payload.validated_data.get("slot"),
            check=self.remembered(request),
        )
        if step.kind in (NextKind.NO_WORK, NextKind.UNIT_DONE):
            return Response(status=status.HTTP_204_NO_CONTENT)
        assert step.slot_pk is not None
        if step.kind is NextKind.PTKB_LEFT:
            raise PtkbLeft(step.slot_pk)
        assert step.passage is not None
        return Response(_passage(step.passage))


class GradeApi(_AssessorView):
    @extend_schema(
        operation_id="relevance_grade",
        request=RelevanceGradeInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={
            201: RelevanceGradeOutput,
            400: OpenApiResponse(description="The reason, per field (a pair not pooled for your unit too)."),
            404: OpenApiResponse(
                description="Not your unit (never held, or its lease passed to someone else)."
            ),
        },
    )
    def post(self, request: Request, slot_pk: int) -> Response:
        """Grade (or regrade) a passage of a unit you hold; time spent adds up over regrades.

        With `"next": true` the answer carries the unit's next passage too, as the next call with `slot`
        would (`null` when none is left), and `unit_complete`, which saves a request per judgment; a
        script then asks the next call for the next unit. Without it the unit is not closed here: the
        next call closes it when it finds nothing left, which saves that check on every grade.
        """
        key = idempotency_key(request)
        payload = RelevanceGradeInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        user: User = request.user  # type: ignore[assignment]
        graded = work_grade(
            user=user,
            slot_pk=slot_pk,
            turn_pk=data["turn_pk"],
            passage_id=data["passage_id"],
            grade=data["grade"],
            time_spent_ms=data.get("time_spent_ms"),
            key=key,
            then_next=data["next"],
            check=self.remembered(request),
        )
        judgment = graded.judgment
        output: dict[str, Any] = {
            "turn_pk": judgment.turn_id,
            "passage_id": judgment.passage_id,
            "grade": judgment.grade,
        }
        if graded.next is not None:
            passage = graded.next.passage
            output["next"] = _passage(passage) if passage is not None else None
            output["unit_complete"] = graded.next.kind is NextKind.UNIT_DONE
        return Response(output, status=status.HTTP_201_CREATED)
