"""The span endpoints of the gold nugget page: save a span as a nugget, move its boundaries, delete it, mark
it a duplicate. The page's script posts each change at once and updates only the nuggets in the answer.

An assessor reaches only their own nuggets: each is fetched through the assessor's judge, so another
assessor's nugget is a 404, and a relevance judge the assessor may not read is a 403. The writes are the
nugget services' (annotation/nuggets/services.py); a span they refuse is a 400 with their reason.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import BadRequest
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import Judge, Nugget, Passage, Turn
from annotation.nuggets.selectors import nugget_payload, relevance_judge_chosen
from annotation.nuggets.services import (
    NuggetRejected,
    nugget_create,
    nugget_delete,
    nugget_duplicate_mark,
    nugget_span_update,
    relevance_grade,
)
from annotation.selectors import assessor_judge
from annotation.services import judge_for_assessor
from annotation.typed import signed_in_user
from core.api_input import IntegerField
from core.page_api import PageApi

MAX_SPAN_TEXT = 100_000


class SpanInput(serializers.Serializer):
    start = IntegerField(
        column=Nugget._meta.get_field("start"), help_text="Offset of the span's first character."
    )
    end = IntegerField(column=Nugget._meta.get_field("end"), help_text="Offset just past its last character.")
    # Checked against the passage exactly as sent; trimming the span is the service's job.
    text = serializers.CharField(
        trim_whitespace=False, max_length=MAX_SPAN_TEXT, help_text="The passage's text between the offsets."
    )


class NuggetCreateInput(SpanInput):
    passage_id = serializers.CharField(max_length=255)
    relevance_judge = IntegerField(
        column=Judge._meta.pk,
        required=False,
        allow_null=True,
        help_text="The judge whose grade of the passage the nugget keeps (one you may read).",
    )


class NuggetDuplicateInput(serializers.Serializer):
    duplicate_of = IntegerField(
        column=Nugget._meta.pk,
        required=False,
        allow_null=True,
        help_text="Another of your nuggets of the turn; null: not a duplicate.",
    )


class NuggetDeleteInput(serializers.Serializer):
    """Nothing to send: the nugget is named in the path."""


class NuggetOutput(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField(help_text="The nugget's key in the turn, e.g. `[3]`.")
    text = serializers.CharField()
    passage_id = serializers.CharField()
    start = serializers.IntegerField(allow_null=True)
    end = serializers.IntegerField(allow_null=True)
    relevance = serializers.CharField(help_text="The passage's grade when the span was saved; empty if none.")
    duplicate_of = serializers.IntegerField(allow_null=True)


class NuggetChangedOutput(serializers.Serializer):
    nugget = NuggetOutput()


class NuggetDeletedOutput(serializers.Serializer):
    deleted = serializers.IntegerField()
    changed = NuggetOutput(many=True, help_text="Its duplicates, which are originals again.")


class NuggetDuplicateOutput(serializers.Serializer):
    changed = NuggetOutput(many=True, help_text="The nugget and the duplicates that followed its mark.")


def _turn(name: str, turn_id: str) -> Turn:
    return get_object_or_404(Turn.objects.select_related("topic"), collection__name=name, turn_id=turn_id)


def _own_nugget(request: Request, turn: Turn, pk: int) -> Nugget:
    """The assessor's own nugget of this turn; anyone else's is a 404."""
    judge = assessor_judge(signed_in_user(request))
    if judge is None:  # no labels yet, so no nuggets of theirs
        raise Http404("no such nugget of yours")
    return get_object_or_404(Nugget.objects.select_related("turn"), pk=pk, turn=turn, judge=judge)


def _refused(exc: NuggetRejected) -> exceptions.ValidationError:
    return exceptions.ValidationError([str(exc)])


def _payloads(nuggets: Any) -> list[dict[str, Any]]:
    return [nugget_payload(n) for n in nuggets]


SPAN_REFUSALS = {
    400: OpenApiResponse(description="The reason the span was refused (outside the passage, ...).")
}


class NuggetCreateApi(PageApi):
    @extend_schema(
        operation_id="nuggets_create",
        request=NuggetCreateInput,
        responses={
            201: NuggetChangedOutput,
            **SPAN_REFUSALS,
            403: OpenApiResponse(description="Not signed in, or a relevance judge you may not read."),
        },
    )
    def post(self, request: Request, name: str, turn_id: str) -> Response:
        """Save a span of a passage as your next nugget of the turn."""
        turn = _turn(name, turn_id)
        payload = NuggetCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        user = signed_in_user(request)
        passage = Passage.objects.filter(
            collection_id=turn.collection_id, passage_id=data["passage_id"]
        ).first()
        if passage is None:
            reason = f"passage {data['passage_id']} is not in collection {name}"
            raise exceptions.ValidationError({"passage_id": [reason]})
        try:
            relevance_judge = relevance_judge_chosen(user=user, value=data.get("relevance_judge"))
        except BadRequest as exc:
            raise exceptions.ValidationError({"relevance_judge": [str(exc)]}) from None
        try:
            nugget = nugget_create(
                judge=judge_for_assessor(user=user),
                turn=turn,
                passage=passage,
                start=data["start"],
                end=data["end"],
                text=data["text"],
                relevance=relevance_grade(
                    relevance_judge=relevance_judge, turn=turn, passage_id=passage.passage_id
                ),
            )
        except NuggetRejected as exc:
            raise _refused(exc) from None
        output = NuggetChangedOutput({"nugget": nugget_payload(nugget)})
        return Response(output.data, status=status.HTTP_201_CREATED)


class NuggetUpdateApi(PageApi):
    @extend_schema(
        operation_id="nuggets_update",
        request=SpanInput,
        responses={200: NuggetChangedOutput, **SPAN_REFUSALS},
    )
    def post(self, request: Request, name: str, turn_id: str, pk: int) -> Response:
        """Move the boundaries of one of your nuggets within its passage."""
        nugget = _own_nugget(request, _turn(name, turn_id), pk)
        payload = SpanInput(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            nugget = nugget_span_update(nugget=nugget, **payload.validated_data)
        except NuggetRejected as exc:
            raise _refused(exc) from None
        return Response(NuggetChangedOutput({"nugget": nugget_payload(nugget)}).data)


class NuggetDeleteApi(PageApi):
    @extend_schema(
        operation_id="nuggets_delete", request=NuggetDeleteInput, responses={200: NuggetDeletedOutput}
    )
    def post(self, request: Request, name: str, turn_id: str, pk: int) -> Response:
        """Delete one of your nuggets; the nuggets marked as its duplicates become originals again."""
        nugget = _own_nugget(request, _turn(name, turn_id), pk)
        # Read, though empty: a body the strict reader refuses is refused here too, before the delete.
        NuggetDeleteInput(data=request.data).is_valid(raise_exception=True)
        followers = list(nugget.duplicates.values_list("id", flat=True))
        nugget_delete(nugget=nugget)
        changed = Nugget.objects.filter(pk__in=followers)
        return Response(NuggetDeletedOutput({"deleted": pk, "changed": _payloads(changed)}).data)


class NuggetDuplicateApi(PageApi):
    @extend_schema(
        operation_id="nuggets_duplicate",
        request=NuggetDuplicateInput,
        responses={
            200: NuggetDuplicateOutput,
            400: OpenApiResponse(
                description="Not another of your nuggets of the turn (itself, or not yours)."
            ),
        },
    )
    def post(self, request: Request, name: str, turn_id: str, pk: int) -> Response:
        """Mark one of your nuggets a duplicate of another of the turn (null: not a duplicate)."""
        turn = _turn(name, turn_id)
        nugget = _own_nugget(request, turn, pk)
        payload = NuggetDuplicateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        target = None
        wanted = payload.validated_data.get("duplicate_of")
        if wanted is not None:
            target = Nugget.objects.filter(pk=wanted, turn=turn, judge_id=nugget.judge_id).first()
            if target is None:
                reason = "a nugget can only duplicate another of your nuggets of the same turn"
                raise exceptions.ValidationError({"duplicate_of": [reason]})
        followers = list(nugget.duplicates.values_list("id", flat=True))
        try:
            nugget = nugget_duplicate_mark(nugget=nugget, duplicate_of=target)
        except NuggetRejected as exc:
            raise _refused(exc) from None
        changed = Nugget.objects.filter(pk__in=[nugget.pk, *followers])
        return Response(NuggetDuplicateOutput({"changed": _payloads(changed)}).data)
