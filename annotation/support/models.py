"""Support labels: whether an answer sentence is supported by the passage it cites."""

from __future__ import annotations

from django.db import models

from annotation.models.collection import ResponseSentence
from annotation.models.judgments import Condition, TimedJudgment


class SupportLabel(models.TextChoices):
    FULL = "FS", "Full support"
    PARTIAL = "PS", "Partial support"
    NONE = "NS", "No support"


SUPPORT_WEIGHTS = {SupportLabel.FULL: 1.0, SupportLabel.PARTIAL: 0.5, SupportLabel.NONE: 0.0}


class SupportJudgment(TimedJudgment):
    """Is an answer sentence supported by the passage it cites (its `citation_index`-th citation)?"""

    sentence = models.ForeignKey(ResponseSentence, on_delete=models.CASCADE, related_name="support_judgments")
    citation_index = models.PositiveSmallIntegerField(default=0)
    passage_id = models.CharField(max_length=255)
    label = models.CharField(max_length=2, choices=SupportLabel.choices)
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.IMPORTED)
    shown_label = models.CharField(max_length=2, choices=SupportLabel.choices, blank=True)
    changed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "sentence", "citation_index"], name="support_unique_unit"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.sentence} c{self.citation_index} = {self.label}"

    @property
    def weight(self) -> float:
        return SUPPORT_WEIGHTS[SupportLabel(self.label)]
