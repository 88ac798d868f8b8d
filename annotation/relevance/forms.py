"""Forms of the relevance assessment pages: validation only, the services do the writing."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import PtkbStatement, RelevanceGrade

# A day: anything longer is a tab left open, not time spent judging.
MAX_TIME_SPENT_MS = 86_400_000


class GradeForm(forms.Form):
    grade = forms.TypedChoiceField(choices=RelevanceGrade.choices, coerce=int, widget=forms.RadioSelect)
    time_spent_ms = forms.IntegerField(required=False, min_value=0, max_value=MAX_TIME_SPENT_MS)
    # A key per page shown: a browser that resends the form (a reload after no answer) sends the same one,
    # and the grade is applied once, its time counted once, as the JSON endpoint's Idempotency-Key does.
    grade_key = forms.UUIDField(required=False, widget=forms.HiddenInput)


class PtkbForm(forms.Form):
    """One relevant / not relevant answer per PTKB statement of the conversation."""

    time_spent_ms = forms.IntegerField(required=False, min_value=0, max_value=MAX_TIME_SPENT_MS)

    def __init__(self, *args: Any, statements: list[PtkbStatement], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statements = statements
        for statement in statements:
            self.fields[f"s{statement.pk}"] = forms.TypedChoiceField(
                choices=[(1, "Relevant"), (0, "Not relevant")],
                coerce=lambda v: bool(int(v)),
                widget=forms.RadioSelect,
                label=statement.text,
            )

    def answers(self) -> dict[int, bool]:
        return {s.pk: self.cleaned_data[f"s{s.pk}"] for s in self.statements}

    def rows(self) -> list[tuple[PtkbStatement, forms.BoundField]]:
        return [(s, self[f"s{s.pk}"]) for s in self.statements]
