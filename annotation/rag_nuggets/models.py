"""TREC RAG nugget labels: how much a nugget matters (importance) and how far an answer holds it (assignment)."""

from __future__ import annotations

from django.db import models

from annotation.models.collection import Response
from annotation.models.judgments import LabelCondition, TimedJudgment


class NuggetImportance(models.TextChoices):
    """How much a nugget matters to a good answer (TREC RAG's AutoNuggetizer words)."""

    VITAL = "vital", "Vital"
    OKAY = "okay", "Okay"


class NuggetSupport(models.TextChoices):
    """How far an answer contains a nugget; the values are nuggetizer's own strings."""

    SUPPORT = "support", "Support"
    PARTIAL = "partial_support", "Partial support"
    NONE = "not_support", "Not support"


NUGGET_SUPPORT_WEIGHTS = {NuggetSupport.SUPPORT: 1.0, NuggetSupport.PARTIAL: 0.5, NuggetSupport.NONE: 0.0}

# nuggetizer's word where its LLM gave no readable label, in either step. Only its files bring it (no page,
# crowd or Assay judge gives it); it is kept so that scores count it as nuggetizer does (an assignment
# "failed" supports nothing but counts in the share's whole; an importance "failed" is not vital) and the
# file comes back as it was. Agreement leaves it out: it is no judgment.
NUGGET_LABEL_FAILED = "failed"


class NuggetImportanceJudgment(TimedJudgment):
    """One judge's vital/okay label for a nugget (of any judge's nugget set)."""

    nugget = models.ForeignKey(
        "annotation.Nugget", on_delete=models.CASCADE, related_name="importance_judgments"
    )
    importance = models.CharField(
        max_length=6, choices=[*NuggetImportance.choices, (NUGGET_LABEL_FAILED, "Failed")]
    )
    condition = models.CharField(
        max_length=12, choices=LabelCondition.choices, default=LabelCondition.IMPORTED
    )
    shown_label = models.CharField(
        max_length=5, choices=NuggetImportance.choices, blank=True, help_text="Post-editing: the label shown."
    )
    changed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "nugget"], name="nugget_importance_unique_unit"),
        ]

    def __str__(self) -> str:
        return f"{self.nugget_id} = {self.importance}"


class NuggetAssignment(TimedJudgment):
    """Whether an answer supports a nugget, partly supports it or not (TREC RAG "nugget assignment").

    The word is the track's; it is a label on an (answer, nugget) pair, unrelated to the relevance
    `Assignment` that hands pooled turns to assessors.
    """

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="nugget_assignments")
    nugget = models.ForeignKey("annotation.Nugget", on_delete=models.CASCADE, related_name="assignments")
    label = models.CharField(max_length=16, choices=[*NuggetSupport.choices, (NUGGET_LABEL_FAILED, "Failed")])
    condition = models.CharField(
        max_length=12, choices=LabelCondition.choices, default=LabelCondition.IMPORTED
    )
    shown_label = models.CharField(
        max_length=16, choices=NuggetSupport.choices, blank=True, help_text="Post-editing: the label shown."
    )
    changed = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "response", "nugget"], name="nugget_assignment_unique_unit"
            ),
        ]
        indexes = [models.Index(fields=["response", "nugget"])]

    def __str__(self) -> str:
        return f"{self.response_id} ~ {self.nugget_id} = {self.label}"

    @property
    def weight(self) -> float:
        if self.label == NUGGET_LABEL_FAILED:
            return 0.0
        return NUGGET_SUPPORT_WEIGHTS[NuggetSupport(self.label)]
