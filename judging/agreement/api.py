"""The data of the live agreement page, which it polls every few seconds while a campaign runs: a page of
the assessors' agreement so far with the LLM judges and with the other assessors (most labels first), and
how many assessors there are. Organisers only, like the page."""

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
from judging.agreement.live import ASSESSORS_PER_PAGE, live_page, live_stored
from judging.agreement.selectors import TASKS


class LiveAgreementQuery(serializers.Serializer):
    task = serializers.ChoiceField(
        choices=list(TASKS),
        default="relevance",
        error_messages={"invalid_choice": f'unknown task "{{input}}"; choose one of {", ".join(TASKS)}'},
    )
    page = serializers.IntegerField(
        min_value=1,
        max_value=1_000_000,
        default=1,
        help_text=f"The page of assessors, most labels first, {ASSESSORS_PER_PAGE} a page.",
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
    assessors = AssessorAgreementOutput(
        many=True, help_text="The page's assessors, most labels first (the latest figures give each one)."
    )
    total = serializers.IntegerField(help_text="Assessors with labels on the task, on every page.")
    page = serializers.IntegerField(help_text="This page (a page past the last has no assessors).")
    pages = serializers.IntegerField()
    per_page = serializers.IntegerField()
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
        """A page of the assessors' agreement so far with the LLM judges and the other assessors, for one
        task: the stored figures, the latest earlier ones (`current` false) while new labels are
        computed."""
        collection = get_object_or_404(Collection, name=name)
        query = query_input(request, LiveAgreementQuery)
        stored = live_stored(collection=collection, task=query["task"])
        shown = live_page(view=stored, page=query["page"])
        if shown is not None:
            return Response(LiveAgreementOutput(shown).data)
        # Nothing computed yet for this task: no figures rather than reading every label here.
        empty = {
            "collection": collection.name,
            "task": query["task"],
            "llm_judges": [],
            "assessors": [],
            "total": 0,
            "page": query["page"],
            "pages": 0,
            "per_page": ASSESSORS_PER_PAGE,
            "updated_at": stored.row.created_at,
            "current": False,
        }
        return Response(LiveAgreementOutput(empty).data)
