"""The judges with labels of each task in each collection, kept beside the labels for the judge menus."""

from __future__ import annotations

from django.db import models

from annotation.models.collection import Collection, Judge


class JudgeLabels(models.Model):
    """How many labels of `task` (given in `condition`, for a task whose rows have one) `judge` has in
    `collection`; a row exists while the count is above zero.

    Written by PostgreSQL alone, in the writer's transaction, by the triggers on each label task's table
    (annotation/labels/judge_labels.py), so that every writer keeps it true: the ORM, the assessor's grade
    statement, COPY and staged imports, the admin, machine jobs. A label whose value is no judgment (the
    task's `Agreement.excluded`: nuggetizer's "failed") is not counted, as `LabelTask.rows` leaves it out.
    Nothing in Python writes it.
    """

    # The unique constraint's index starts with the collection, so the column needs none of its own.
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+", db_index=False)
    task = models.CharField(max_length=32)
    condition = models.CharField(max_length=12, blank=True, default="")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="label_counts")
    label_count = models.BigIntegerField()

    class Meta:
        verbose_name_plural = "judge labels"
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "task", "condition", "judge"], name="judge_labels_unique"
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.judge_id} {self.task}/{self.condition or '-'} in {self.collection_id}: {self.label_count}"
        )
