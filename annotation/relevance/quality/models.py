"""Gold pairs planted in relevance work, the grades given to them, and assessors paused by an organiser."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.collection import Collection, Judge, Turn
from annotation.relevance.models import Assignment, RelevanceJudgment, WorkUnit


class GoldPlan(models.Model):
    """An assignment's gold: pairs its reference judge graded, planted at `share` of what assessors see."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="gold_plan")
    judge = models.ForeignKey(
        Judge, on_delete=models.PROTECT, related_name="gold_plans", help_text="The reference judge."
    )
    share = models.FloatField(help_text="Share of gold among the pairs an assessor grades.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(share__gt=0) & Q(share__lt=1), name="gold_plan_share_0_1"),
        ]

    def __str__(self) -> str:
        return f"{self.assignment.name}: {self.share:.0%} of {self.judge.name}"


class GoldPair(models.Model):
    """A pair the reference judge graded, shown among a unit's pooled passages of the same turn.

    It takes its place just before the turn's pooled passage of presentation order `order` (after the
    last one when `order` is the turn's count); `grade` is the reference grade it was planted with.
    """

    unit = models.ForeignKey(WorkUnit, on_delete=models.CASCADE, related_name="gold_pairs")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    passage_id = models.CharField(max_length=255)
    order = models.PositiveIntegerField()
    grade = models.SmallIntegerField()

    class Meta:
        ordering = ["unit", "turn_id", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "turn", "passage_id"], name="gold_pair_unique"),
        ]
        # The next-passage statement walks a unit turn's gold in order, beside its pool entries.
        indexes = [models.Index(fields=["unit", "turn", "order", "id"], name="gold_pair_in_order")]

    def __str__(self) -> str:
        return f"{self.unit} {self.turn_id} {self.passage_id} (gold {self.grade})"


class GoldGrade(models.Model):
    """Marks an assessor's grade as given to a gold pair: kept out of their qrels unless asked."""

    judgment = models.OneToOneField(
        RelevanceJudgment, on_delete=models.CASCADE, primary_key=True, related_name="gold_grade"
    )
    pair = models.ForeignKey(GoldPair, on_delete=models.CASCADE, related_name="grades")

    def __str__(self) -> str:
        return f"{self.judgment_id} gold {self.pair_id}"


class AssessorPause(models.Model):
    """An organiser has paused an assessor's relevance work in a collection: no new units until resumed."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="assessor_pauses")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="relevance_pauses"
    )
    paused_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "user"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "user"], name="assessor_pause_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} paused in {self.collection.name}"
