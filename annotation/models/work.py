"""Work handed to people: pools, relevance assignments with leased copies, support conditions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.collection import Judge, Topic, Turn

# --- Support assessment: organisers' per-topic-and-assessor conditions ----------------------


class SupportAssignment(models.Model):
    """Which condition an assessor judges a topic's support units in, chosen by an organiser.

    One row per (topic, assessor), so an assessor meets a topic's units in one condition only. A blind
    re-assessment names its sampled units in `units` ([sentence id, citation index] pairs); the other
    conditions cover every unit of the topic up to the first `max_citations` citations of each sentence.
    """

    class Condition(models.TextChoices):
        SCRATCH = "scratch", "From scratch"
        POST_EDIT = "post-edit", "Post-editing"
        BLIND = "blind", "Blind re-assessment"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="support_assignments")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="support_assignments"
    )
    condition = models.CharField(max_length=12, choices=Condition.choices)
    machine_judge = models.ForeignKey(
        Judge,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="support_assignments_shown",
        help_text="Post-editing: the judge whose label is shown and preselected.",
    )
    max_citations = models.PositiveSmallIntegerField(default=1)
    units = models.JSONField(
        default=list, blank=True, help_text="Blind: [sentence id, citation index] pairs."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic_id", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["topic", "user"], name="support_assignment_unique_topic_user"),
            models.CheckConstraint(
                condition=~Q(condition="post-edit") | Q(machine_judge__isnull=False),
                name="support_assignment_post_edit_has_judge",
            ),
            models.CheckConstraint(
                condition=Q(max_citations__gte=1), name="support_assignment_max_citations_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic.number} {self.user} ({self.condition})"


# --- Gold nuggets: the turns a nugget set covers --------------------------------------------


class NuggetSetTurn(models.Model):
    """A turn that a judge's nugget set covers, at its place in the set.

    A set may cover a turn with no nugget at all (CONE-RAG files keep such a turn as `{}`), and files
    list turns in their own order, so neither fact can be read off the Nugget rows; exports need both
    to give back the file they were imported from byte for byte.
    """

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="nugget_set_turns")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="nugget_set_turns")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["judge_id", "position"]
        constraints = [models.UniqueConstraint(fields=["judge", "turn"], name="nugget_set_turn_unique")]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.turn_id} @{self.position}"


# --- TREC RAG nugget evaluation: post-editing, importance and assignment by people -----------


class NuggetWork(models.Model):
    """One nugget step for one topic handed to an assessor by an organiser.

    `edit`: rewrite the nuggets of `source_judge` (typically an LLM) into the assessor's own set.
    `importance`: label each nugget of `source_judge`'s set vital or okay. `assignment`: label each
    (answer, nugget) pair of the topic against `source_judge`'s nuggets. For the two labelling steps,
    `post-edit` shows `machine_judge`'s label preselected, `scratch` shows none. The clock fields give
    the time per topic the pages report.
    """

    class Step(models.TextChoices):
        EDIT = "edit", "Post-edit nuggets"
        IMPORTANCE = "importance", "Importance"
        ASSIGNMENT = "assignment", "Assignment"

    class Condition(models.TextChoices):
        SCRATCH = "scratch", "From scratch"
        POST_EDIT = "post-edit", "Post-editing"

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="nugget_work")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="nugget_work")
    step = models.CharField(max_length=12, choices=Step.choices)
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.SCRATCH)
    source_judge = models.ForeignKey(
        Judge,
        on_delete=models.PROTECT,
        related_name="nugget_work_sources",
        help_text="The nugget set worked on.",
    )
    machine_judge = models.ForeignKey(
        Judge,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="nugget_work_shown",
        help_text="Post-editing labels: the judge whose label is shown and preselected.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    time_spent_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["topic_id", "step", "user_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "user", "step"], name="nugget_work_unique_topic_user_step"
            ),
            models.CheckConstraint(
                condition=~Q(condition="post-edit") | Q(machine_judge__isnull=False),
                name="nugget_work_post_edit_has_judge",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic.number} {self.user} {self.step} ({self.condition})"


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
