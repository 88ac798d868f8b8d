"""The status endpoint of a background import, which the import page polls to fill its bar and, once the
import has ended, reload itself with the outcome. Organisers only, like the console; an import is reached
through its collection."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.permissions import IsOrganiser
from console.models import ImportJob
from console.uploads import selectors
from core.page_api import PageApi


class ImportStatusOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=[*ImportJob.Status.values, "interrupted"])
    status_label = serializers.CharField(source="label", help_text="The status in words.")
    percent = serializers.IntegerField(help_text="The share of the file stored so far, 0 to 100.")
    done = serializers.IntegerField()
    total = serializers.IntegerField(help_text="0 until the import knows how much the file holds.")
    finished = serializers.BooleanField(help_text="The import has ended (or was interrupted): reload.")
    reason = serializers.CharField(help_text="Why it was interrupted; empty otherwise.")


class ImportStatusApi(PageApi):
    permission_classes = [IsAuthenticated, IsOrganiser]

    @extend_schema(operation_id="console_import_status", responses={200: ImportStatusOutput})
    def get(self, request: Request, name: str, pk: int) -> Response:
        """An import's status and progress, as its page shows them."""
        job = get_object_or_404(ImportJob.objects.select_related("collection"), pk=pk, collection__name=name)
        return Response(ImportStatusOutput(selectors.import_job_state(job=job)).data)
