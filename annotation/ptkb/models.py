"""PTKB labels: whether a statement of the user's personal knowledge base bears on a turn."""

from __future__ import annotations

from django.db import models

from annotation.models.collection import PtkbStatement, Turn
from annotation.models.judgments import TimedJudgment


class PtkbJudgment(TimedJudgment):
    """Whether a PTKB statement is relevant to a turn."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="ptkb_judgments")
    statement = models.ForeignKey(PtkbStatement, on_delete=models.CASCADE, related_name="judgments")
    relevant = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "turn", "statement"], name="ptkb_unique_unit"),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id} {self.statement_id} = {int(self.relevant)}"
