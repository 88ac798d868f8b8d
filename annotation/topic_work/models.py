"""A topic handed to an assessor for one kind of work."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.judgments import WORK_CONDITIONS, Condition


class TopicWork(models.Model):
    """One kind of work on one topic handed to an assessor by an organiser.

    `support`: label the topic's support units, the first `max_citations` citations of each answer
    sentence, or in a blind re-assessment only the sampled `units` ([sentence id, citation index] pairs).
    `nugget-edit`: rewrite the nuggets of `source_judge` (typically an LLM) into the assessor's own set.
    `nugget-importance`: label each nugget of `source_judge`'s set vital or okay. `nugget-assignment`:
    label each (answer, nugget) pair of the topic against `source_judge`'s nuggets. In `post-edit`,
    `machine_judge`'s label is shown preselected; in `scratch` none is. One row per (topic, assessor,
    kind), so an assessor meets a topic's units of one kind in one condition only. The clock fields give
    the time per topic the nugget pages report.
    """

    class Kind(models.TextChoices):
        SUPPORT = "support", "Support"
        NUGGET_EDIT = "nugget-edit", "Post-edit nuggets"
        NUGGET_IMPORTANCE = "nugget-importance", "Importance"
        NUGGET_ASSIGNMENT = "nugget-assignment", "Assignment"

    topic = models.ForeignKey("annotation.Topic", on_delete=models.CASCADE, related_name="topic_work")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="topic_work")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    condition = models.CharField(max_length=12, choices=Condition.choices, default=Condition.SCRATCH)
    source_judge = models.ForeignKey(
        "annotation.Judge",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="topic_work_sources",
        help_text="Nugget work: the nugget set worked on.",
    )
    machine_judge = models.ForeignKey(
        "annotation.Judge",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="topic_work_shown",
        help_text="Post-editing: the judge whose label is shown and preselected.",
    )
    max_citations = models.PositiveSmallIntegerField(default=1, help_text="Support: citations per sentence.")
    units = models.JSONField(
        default=list, blank=True, help_text="Support, blind: [sentence id, citation index] pairs."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    time_spent_ms = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "topic work"
        ordering = ["topic_id", "kind", "user_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "user", "kind"], name="topic_work_unique_topic_user_kind"
            ),
            models.CheckConstraint(
                condition=Q(condition__in=[c.value for c in WORK_CONDITIONS]),
                name="topic_work_condition_of_people",
            ),
            models.CheckConstraint(
                condition=~Q(condition=Condition.POST_EDIT) | Q(machine_judge__isnull=False),
                name="topic_work_post_edit_has_judge",
            ),
            models.CheckConstraint(
                condition=Q(kind="support") | Q(source_judge__isnull=False),
                name="topic_work_nuggets_have_source",
            ),
            models.CheckConstraint(condition=Q(max_citations__gte=1), name="topic_work_max_citations_1"),
        ]

    def __str__(self) -> str:
        return f"{self.topic.number} {self.user} {self.kind} ({self.condition})"
