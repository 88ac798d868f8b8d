"""The form of the calibration page and command: two nugget evaluations of the same runs (each an
assignment judge and an importance judge) and the score compared."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Judge
from annotation.typed import choice_field
from judging.agreement.calibration.selectors import NuggetEvaluation
from judging.rag_nuggets.forms import answered_only_field
from judging.rag_nuggets.metrics import IMPORTANCE_DEFAULT, SCORE_NAMES
from judging.rag_nuggets.selectors import DEFAULT_SCORE


class CalibrationForm(forms.Form):
    judge_a = forms.ModelChoiceField(
        label="A: assignment judge", queryset=Judge.objects.none(), to_field_name="name"
    )
    importance_a = forms.ModelChoiceField(
        label="A: importance judge", queryset=Judge.objects.none(), to_field_name="name", required=False
    )
    judge_b = forms.ModelChoiceField(
        label="B: assignment judge", queryset=Judge.objects.none(), to_field_name="name"
    )
    importance_b = forms.ModelChoiceField(
        label="B: importance judge", queryset=Judge.objects.none(), to_field_name="name", required=False
    )
    score = forms.ChoiceField(
        choices=[(name, name) for name in SCORE_NAMES], initial=DEFAULT_SCORE, required=False
    )
    answered_only = answered_only_field()

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # One query per menu; a judge without labels of the kind here is a form error, not an empty report.
        assigners = judges_with_labels(collection=collection, task="nugget-assignment")
        importance = judges_with_labels(collection=collection, task="nugget-importance")
        for side in ("a", "b"):
            choice_field(self, f"judge_{side}").queryset = assigners
            field = choice_field(self, f"importance_{side}")
            field.queryset = importance
            field.empty_label = "default"
            field.help_text = f"Default: {IMPORTANCE_DEFAULT}."

    def clean_score(self) -> str:
        return self.cleaned_data["score"] or DEFAULT_SCORE

    def clean(self) -> dict[str, Any]:
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
