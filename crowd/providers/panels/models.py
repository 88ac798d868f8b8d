"""External studies of participant panels (Prolific and the like) run on in-platform campaigns."""

from __future__ import annotations

from django.db import models

from crowd.campaigns.models import CrowdCampaign


class CrowdStudy(models.Model):
    """An in-platform campaign run as an external study of a participant panel (Prolific and the like).

    The panel sends each participant to the study's address with their ids in the query string (the
    parameter names are the panel's, Prolific's by default); each participant answers one batch, and at
    the end gets the completion code or is redirected to the panel's completion address. The code is
    kept here, never put in a link, so it is not seen before the work is done.
    """

    campaign = models.ForeignKey(CrowdCampaign, on_delete=models.CASCADE, related_name="studies")
    key = models.SlugField(max_length=40, unique=True, help_text="The unguessable part of the study address.")
    panel = models.SlugField(
        max_length=40, default="prolific", help_text="Worker ids are stored as <panel>:<participant id>."
    )
    worker_param = models.CharField(max_length=64, default="PROLIFIC_PID")
    study_param = models.CharField(max_length=64, default="STUDY_ID")
    session_param = models.CharField(max_length=64, default="SESSION_ID")
    external_study_id = models.CharField(
        max_length=128, blank=True, help_text="When set, the study id parameter must carry this value."
    )
    completion_code = models.CharField(max_length=64, blank=True)
    completion_url = models.URLField(
        max_length=500, blank=True, help_text="Where participants are sent when done (the panel's page)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "id"]

    def __str__(self) -> str:
        return f"{self.campaign.name} on {self.panel}"
