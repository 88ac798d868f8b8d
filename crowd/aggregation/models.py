"""Aggregation jobs: a task worker fits crowd-kit's models to a nugget-support campaign's answers."""

from __future__ import annotations

from django.db import models

from core.jobs import BackgroundJob, JobStatus
from crowd.campaigns.models import CrowdCampaign


class CrowdFitJob(BackgroundJob):
    """One aggregation of a nugget-support campaign started from its page: fitting crowd-kit's models takes
    seconds to minutes, so a task worker runs it (crowd/aggregation/tasks.py) and the page follows this row."""

    Status = JobStatus

    campaign = models.ForeignKey(CrowdCampaign, on_delete=models.CASCADE, related_name="fit_jobs")
    method = models.CharField(max_length=16)
    min_votes = models.PositiveSmallIntegerField(default=1)
    # What the aggregation wrote, or why it failed: the page shows it as it is.
    message = models.TextField(blank=True)

    class Meta(BackgroundJob.Meta):
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.campaign.name} by {self.method} ({self.status})"
