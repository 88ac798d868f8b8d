"""The assessor JSON endpoints, next passage and grade: the assessor page's script and scripted clients.

Both call the relevance work rules (annotation.relevance.work) and nothing else. The page signs in with
its session (and sends the CSRF token in the X-CSRFToken header); scripts send `Authorization: Token
<key>`.
"""

from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from annotation.models import RelevanceGrade
from annotation.relevance.forms import MAX_TIME_SPENT_MS
from annotation.relevance.work import NextKind, NextPassage, NotPooled, WorkRefused, work_grade, work_next

# Token first: a scripted client's request then never touches the session machinery.
ASSESSOR_API_AUTHENTICATION = [TokenAuthentication, SessionAuthentication]


class NextInput(serializers.Serializer):
    slot = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="Stay on this unit (as the assessor page does): 204 once it is complete, instead of "
        "closing it and leasing the next.",
    )


class NextOutput(serializers.Serializer):
    slot = serializers.IntegerField()
    unit = serializers.CharField()
    turn_id = serializers.CharField()
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField()
    index = serializers.IntegerField(help_text="The passage's place in its turn, from 0.")
    title = serializers.CharField(allow_blank=True)
    text = serializers.CharField(
        allow_blank=True, allow_null=True, help_text="null: the collection lacks it."
    )
    url = serializers.CharField(help_text="The same passage on the assessor page.")


class GradeInput(serializers.Serializer):
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField(max_length=255)
    grade = serializers.ChoiceField(choices=RelevanceGrade.choices)
    time_spent_ms = serializers.IntegerField(
        min_value=0, max_value=MAX_TIME_SPENT_MS, required=False, allow_null=True
    )
    next = serializers.BooleanField(
        default=False,
        help_text="Answer with the unit's next passage too, as the next call with `slot` would (null when "
        "none is left: the unit is closed, or only its PTKB step is left); saves a request per judgment.",
    )


class GradeOutput(serializers.Serializer):
    turn_pk = serializers.IntegerField()
    passage_id = serializers.CharField()
    grade = serializers.IntegerField()


class GradeNextOutput(GradeOutput):
    """The answer to a grade sent with `next`."""

    next = NextOutput(allow_null=True, help_text="The unit's next passage; null when none is left.")


def _passage_output(passage: NextPassage) -> dict:
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


class NextUnitApi(APIView):
    """POST: lease work in an assignment and get the next passage to grade; 204 when none is left.

    A held unit whose screens are all answered is closed here (SubmitGradeApi leaves that to this call)
    and the next one leased; with `slot`, the answer stays on that unit and is 204 once it is complete.
    If only a PTKB step is left the answer is 409 with the page that asks for it (the JSON client grades
    passages only). 404 outside the assignment, or for a unit the caller does not hold.
    """

    authentication_classes = ASSESSOR_API_AUTHENTICATION

    @extend_schema(
        request=NextInput,
        responses={
            200: NextOutput,
            204: OpenApiResponse(description="No work left in this assignment (or in the unit asked for)."),
            409: OpenApiResponse(description="Only the PTKB step of the unit is left; do it on the page."),
        },
    )
    def post(self, request: Request, assignment_pk: int) -> ApiResponse:
        payload = NextInput(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            step = work_next(
                user=request.user, assignment_pk=assignment_pk, slot_pk=payload.validated_data.get("slot")
            )
        except WorkRefused as exc:
            raise Http404(str(exc)) from None
        if step.kind in (NextKind.NO_WORK, NextKind.UNIT_DONE):
            return ApiResponse(status=status.HTTP_204_NO_CONTENT)
        assert step.slot is not None
        if step.kind is NextKind.PTKB_LEFT:
            return ApiResponse(
                {
                    "slot": step.slot.pk,
                    "detail": "only the PTKB step is left",
                    "url": reverse("relevance-resume", args=[step.slot.pk]),
                },
                status=status.HTTP_409_CONFLICT,
            )
        assert step.passage is not None
        return ApiResponse(NextOutput(_passage_output(step.passage)).data)


class SubmitGradeApi(APIView):
    """POST: grade (or regrade) a passage of a unit the caller holds; 404 for anyone else's unit.

    The unit is not closed here: the next call to NextUnitApi closes it when it finds nothing left,
    which saves that check on every grade.
    """

    authentication_classes = ASSESSOR_API_AUTHENTICATION

    @extend_schema(
        request=GradeInput,
        responses={201: OpenApiResponse(GradeNextOutput, description="`next` only when asked for.")},
    )
    def post(self, request: Request, slot_pk: int) -> ApiResponse:
        payload = GradeInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        try:
            graded = work_grade(
                user=request.user,
                slot_pk=slot_pk,
                turn_pk=data["turn_pk"],
                passage_id=data["passage_id"],
                grade=data["grade"],
                time_spent_ms=data.get("time_spent_ms"),
                then_next=data["next"],
            )
        except WorkRefused as exc:
            raise Http404(str(exc)) from None
        except NotPooled as exc:
            return ApiResponse({"passage_id": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        judgment = graded.judgment
        output: dict = {
            "turn_pk": judgment.turn_id,
            "passage_id": judgment.passage_id,
            "grade": judgment.grade,
        }
        if graded.next is None:
            return ApiResponse(GradeOutput(output).data, status=status.HTTP_201_CREATED)
        passage = graded.next.passage
        output["next"] = _passage_output(passage) if passage is not None else None
        return ApiResponse(GradeNextOutput(output).data, status=status.HTTP_201_CREATED)


next_unit_api = NextUnitApi.as_view()
submit_grade_api = SubmitGradeApi.as_view()
