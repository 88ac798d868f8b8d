"""The form of the calibration page and command: two nugget evaluations of the same runs (each an
assignment judge and an importance judge) and the score compared."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from annotation.typed import choice_field
from judging.rag_nuggets.calibration.selectors import NuggetEvaluation
from judging.rag_nuggets.forms import SCORE_CHOICES, answered_only_field, judge_field
from judging.rag_nuggets.selectors import DEFAULT_SCORE

IMPORTANCE_OPTIONS: dict[str, Any] = {
    "required": False,
    "empty_label": "default",
    "help_text": f"Default: {IMPORTANCE_DEFAULT}.",
}


class CalibrationForm(forms.Form):
    judge_a = judge_field("A: assignment judge")
    importance_a = judge_field("A: importance judge", **IMPORTANCE_OPTIONS)
    judge_b = judge_field("B: assignment judge")
    importance_b = judge_field("B: importance judge", **IMPORTANCE_OPTIONS)
    score = forms.ChoiceField(choices=SCORE_CHOICES, initial=DEFAULT_SCORE, required=False)
    answered_only = answered_only_field()

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # One query per menu; a judge without labels of the kind here is a form error, not an empty report.
        assigners = judges_with_labels(collection=collection, task="nugget-assignment")
        importance = judges_with_labels(collection=collection, task="nugget-importance")
        for side in ("a", "b"):
            choice_field(self, f"judge_{side}").queryset = assigners
            choice_field(self, f"importance_{side}").queryset = importance

    def clean_score(self) -> str:
        return self.cleaned_data["score"] or DEFAULT_SCORE

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if (
            data.get("judge_a") is not None
            and data.get("judge_a") == data.get("judge_b")
            and data.get("importance_a") == data.get("importance_b")
        ):
            self.add_error(
                None,
                "Evaluations A and B are the same choices: change the judge or the importance judge of one.",
            )
        return data

    def evaluations(self) -> tuple[NuggetEvaluation, NuggetEvaluation]:
        data = self.cleaned_data
        return (
            NuggetEvaluation(judge=data["judge_a"], importance_judge=data["importance_a"]),
            NuggetEvaluation(judge=data["judge_b"], importance_judge=data["importance_b"]),
        )
