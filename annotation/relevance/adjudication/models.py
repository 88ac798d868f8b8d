"""An adjudication (which judges, whose queue, which judge it writes) and the pairs in its queue."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.collection import Collection, Judge, Turn


class Adjudication(models.Model):
    """Pairs of `collection` that the `sources` judges graded too far apart, for `adjudicator` to grade.

    `judge` is the judge it writes: the grades the sources agreed on, written when the adjudication is
    assigned, and the adjudicator's grades. A pair is disputed when its grades differ by at least
    `min_difference`, or, with `across_threshold`, when some are relevant (from `relevant_from`) and
    some are not.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="adjudications")
    judge = models.OneToOneField(Judge, on_delete=models.PROTECT, related_name="adjudication")
    sources = models.ManyToManyField(Judge, related_name="adjudicated_in")
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications"
    )
    min_difference = models.PositiveSmallIntegerField(default=2)
    across_threshold = models.BooleanField(default=False)
    relevant_from = models.PositiveSmallIntegerField(default=2)
    show_grades = models.BooleanField(default=False, help_text="Show the adjudicator the earlier grades.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "judge"]
        constraints = [
            models.CheckConstraint(
                condition=Q(min_difference__gte=1) & Q(min_difference__lte=4),
                name="adjudication_difference_1_4",
            ),
            models.CheckConstraint(
                condition=Q(relevant_from__gte=1) & Q(relevant_from__lte=4), name="adjudication_relevant_1_4"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge.name} on {self.collection.name} by {self.adjudicator}"


class AdjudicationItem(models.Model):
    """A disputed pair in the adjudicator's queue; `graded_at` is set once the adjudicator graded it."""

    adjudication = models.ForeignKey(Adjudication, on_delete=models.CASCADE, related_name="items")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="+")
    passage_id = models.CharField(max_length=255)
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["adjudication", "turn_id", "passage_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["adjudication", "turn", "passage_id"], name="adjudication_item_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.adjudication_id} {self.turn_id} {self.passage_id}"
