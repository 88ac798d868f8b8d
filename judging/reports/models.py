"""A stored report: one computation of one report on one collection for one set of choices, kept under
the fingerprint of what it read (judging/reports/store.py)."""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from annotation.models import Collection
from core.jobs import BackgroundJob, JobStatus


class ReportResult(BackgroundJob):
    """The figures of a report, or where their computation stands, or why it failed."""

    Status = JobStatus

    kind = models.CharField(max_length=60, help_text="Which report (e.g. agreement-comparison).")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="reports")
    # The page's choices, normalised (what the compute function reads), and their digest: the rows of the
    # same choices with other fingerprints are the earlier figures of this report.
    params = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    params_key = models.CharField(max_length=64)
    # Digest of kind, the report's code version, collection, choices and the revisions of the tables it
    # reads, taken when it was asked: unchanged inputs find this row again.
    key = models.CharField(max_length=64)
    compute = models.CharField(max_length=200, help_text="Dotted path of the function computing it.")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    progress_word = models.CharField(max_length=100, blank=True)
    result = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta(BackgroundJob.Meta):
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="report_result_key")]
        indexes = [models.Index(fields=["kind", "collection", "params_key"], name="report_result_choices")]

    def __str__(self) -> str:
        return f"{self.kind} report {self.pk} ({self.status})"

    @property
    def percent(self) -> int:
        if not self.progress_total:
            return 0
        return min(100, round(100 * self.progress_done / self.progress_total))
