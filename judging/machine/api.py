"""The progress endpoint of a judge job, which the Jobs page polls for each unfinished job's row: units done,
calls, tokens and cost so far, and its state in words. Organisers only, like the page."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.permissions import IsOrganiser
from core.page_api import PageApi
from judging.machine.jobs.state import INTERRUPTED, jobs_read
from judging.models import JudgeJob


class JobProgressOutput(serializers.Serializer):
    id = serializers.IntegerField(source="job.pk")
    status = serializers.ChoiceField(choices=[*JudgeJob.Status.values, INTERRUPTED], source="state")
    status_text = serializers.CharField(help_text="The state in words: what went wrong first, if anything.")
    units_done = serializers.IntegerField(source="job.units_done")
    units_total = serializers.IntegerField(source="job.units_total")
    units_failed = serializers.IntegerField(source="job.units_failed")
    percent = serializers.IntegerField(source="job.percent", help_text="Units done, 0 to 100.")
    calls_made = serializers.IntegerField(source="job.calls_made")
    cache_hits = serializers.IntegerField(source="job.cache_hits")
    input_tokens = serializers.IntegerField(source="job.input_tokens")
    output_tokens = serializers.IntegerField(source="job.output_tokens")
    cost_usd = serializers.DecimalField(
        source="job.cost_usd", max_digits=12, decimal_places=4, help_text="In US dollars, as text."
    )
    summary = serializers.CharField(
        source="job.summary", help_text="What the last run found, in words (NLI jobs); may be empty."
    )


class JobProgressApi(PageApi):
    permission_classes = [IsAuthenticated, IsOrganiser]

    @extend_schema(operation_id="jobs_progress", responses={200: JobProgressOutput})
    def get(self, request: Request, pk: int) -> Response:
        """A judge job's progress and cost so far."""
        (read,) = jobs_read([get_object_or_404(JudgeJob, pk=pk)])
        return Response(JobProgressOutput(read).data)
