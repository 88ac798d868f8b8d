"""TREC RAG nugget labels: how much a nugget matters (importance) and how far an answer holds it (assignment)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models.collection import Judge, Response, Turn
from annotation.models.judgments import Condition, TimedJudgment


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
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.IMPORTED)
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

    # No index of its own: the (response, nugget) index leads with it.
    response = models.ForeignKey(
        Response, on_delete=models.CASCADE, related_name="nugget_assignments", db_index=False
    )
    nugget = models.ForeignKey("annotation.Nugget", on_delete=models.CASCADE, related_name="assignments")
    label = models.CharField(max_length=16, choices=[*NuggetSupport.choices, (NUGGET_LABEL_FAILED, "Failed")])
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.IMPORTED)
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


class NuggetEdit(models.Model):
    """One edit made while post-editing a nugget set, kept so the history can be read back and timed.

    `before` and `after` hold the affected nuggets as `{"key", "text"}` lists: one to one for a
    rewrite, many to one for a merge, one to many for a split, one to none for a delete, none to one
    for an add, and the whole list of keys for a reorder.
    """

    class Action(models.TextChoices):
        REWRITE = "rewrite", "Rewrite"
        MERGE = "merge", "Merge"
        SPLIT = "split", "Split"
        DELETE = "delete", "Delete"
        ADD = "add", "Add"
        REORDER = "reorder", "Reorder"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="nugget_edits")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="nugget_edits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="nugget_edits"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    before = models.JSONField(default=list, blank=True)
    after = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge_id", "turn_id", "id"]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.turn_id} {self.action}"
