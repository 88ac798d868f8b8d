"""The data of the live agreement page, which it polls every few seconds while a campaign runs: each
assessor's agreement so far with the LLM judges and with the other assessors. Organisers only, like the
page."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.models import Collection
from annotation.permissions import IsOrganiser
from core.api_input import query_input
from core.page_api import PageApi
from judging.agreement.live import live_stored
from judging.agreement.selectors import TASKS


class LiveAgreementQuery(serializers.Serializer):
    task = serializers.ChoiceField(
        choices=list(TASKS),
        default="relevance",
        error_messages={"invalid_choice": f'unknown task "{{input}}"; choose one of {", ".join(TASKS)}'},
    )


class AgreementOutput(serializers.Serializer):
    n = serializers.IntegerField(help_text="Units both labelled.")
    exact_agreement = serializers.FloatField(allow_null=True, help_text="null when they share no unit.")
    cohen_kappa = serializers.FloatField(allow_null=True, help_text="null when it is undefined.")


class LlmAgreementOutput(AgreementOutput):
    judge = serializers.CharField()
    judge_id = serializers.IntegerField()


class AssessorAgreementOutput(serializers.Serializer):
    judge = serializers.CharField()
    judge_id = serializers.IntegerField()
    labels = serializers.IntegerField(help_text="Labels the assessor has given so far.")
    llm = LlmAgreementOutput(many=True, help_text="With each LLM judge of the collection.")
    assessors = AgreementOutput(help_text="With the other assessors, pooled over the units they share.")


class LiveAgreementOutput(serializers.Serializer):
    collection = serializers.CharField()
    task = serializers.ChoiceField(choices=list(TASKS))
    llm_judges = serializers.ListField(child=serializers.CharField())
    assessors = AssessorAgreementOutput(many=True)
    updated_at = serializers.DateTimeField()
    current = serializers.BooleanField(
        help_text="false while newer labels are being computed: the figures are those of `updated_at`."
    )


class LiveAgreementApi(PageApi):
    permission_classes = [IsAuthenticated, IsOrganiser]

    @extend_schema(
        operation_id="agreement_live",
        parameters=[LiveAgreementQuery],
        responses={200: LiveAgreementOutput, 400: OpenApiResponse(description="An unknown task.")},
    )
    def get(self, request: Request, name: str) -> Response:
        """Each assessor's agreement so far with the LLM judges and the other assessors, for one task: the
        stored figures, the latest earlier ones (`current` false) while new labels are computed."""
        collection = get_object_or_404(Collection, name=name)
        query = query_input(request, LiveAgreementQuery)
        stored = live_stored(collection=collection, task=query["task"])
        if stored.result is not None:
            return Response(LiveAgreementOutput({**stored.result, "current": True}).data)
        if stored.earlier is not None and stored.earlier.result is not None:
            return Response(LiveAgreementOutput({**stored.earlier.result, "current": False}).data)
        # Nothing computed yet for this task: no figures rather than reading every label here.
        empty = {
            "collection": collection.name,
            "task": query["task"],
            "llm_judges": [],
            "assessors": [],
            "updated_at": stored.row.created_at,
            "current": False,
        }
        return Response(LiveAgreementOutput(empty).data)
