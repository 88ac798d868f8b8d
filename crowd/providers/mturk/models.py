"""An MTurk qualification test made from a campaign's test questions, required by the campaign's HITs."""

from __future__ import annotations

from django.core.validators import MaxValueValidator
from django.db import models

from crowd.campaigns.models import CrowdCampaign


class CrowdQualification(models.Model):
    """The qualification type MTurk made for a campaign: a test of `questions` test questions, scored as
    the share answered right x 100; the campaign's HITs require at least `threshold`.

    The test and answer key sent to MTurk are kept, so what workers were asked can be read back later.
    """

    campaign = models.OneToOneField(CrowdCampaign, on_delete=models.CASCADE, related_name="qualification")
    qualification_type_id = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, default="Active", help_text="As MTurk last reported it.")
    threshold = models.PositiveSmallIntegerField(
        validators=[MaxValueValidator(100)], help_text="Least score (% of the test right) a worker needs."
    )
    questions = models.PositiveSmallIntegerField(help_text="Test questions in the qualification test.")
    test_duration_seconds = models.PositiveIntegerField()
    test_xml = models.TextField()
    answer_key_xml = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign"]

    def __str__(self) -> str:
        return f"{self.campaign.name} qualification {self.qualification_type_id}"

    def requirement(self) -> dict[str, object]:
        """The QualificationRequirement a HIT of the campaign carries for this test."""
        return {
            "QualificationTypeId": self.qualification_type_id,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [self.threshold],
        }
