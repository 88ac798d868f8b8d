"""What every family's label rows share: the judge and time spent of a row, and how a label came to be.

Each family keeps its own label models in its package (`annotation/relevance/models.py`, ...)."""

from __future__ import annotations

from django.db import models

from annotation.models.collection import Judge


class TimedJudgment(models.Model):
    """What every human or machine label row carries besides its unit and its value."""

    # No index of its own: every label table's unique unit leads with the judge, and each extra index is
    # written on every label (a file's hundreds of thousands).
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="%(class)ss", db_index=False)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Condition(models.TextChoices):
    """How a label came to be: a person from scratch, post-editing a machine's label (shown preselected)
    or blind to both earlier labels (a re-assessment of a disagreement); a machine; a file."""

    SCRATCH = "scratch", "From scratch"
    POST_EDIT = "post-edit", "Post-editing"
    MACHINE = "machine", "Machine"
    IMPORTED = "imported", "Imported"
    BLIND = "blind", "Blind re-assessment"


# The conditions people work in; machines and files give the other two.
WORK_CONDITIONS = (Condition.SCRATCH, Condition.POST_EDIT, Condition.BLIND)
