"""The form of the run-evaluation page: the judge whose qrels score the runs, and the relevance threshold."""

from __future__ import annotations

from django import forms

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Judge, RelevanceGrade
from annotation.typed import choice_field
from judging.scores.relevance import DEFAULT_REL_THRESHOLD


class EvaluationForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.none(), to_field_name="name", empty_label=None)
    rel = forms.TypedChoiceField(
        label="Relevant from grade",
        coerce=int,
        initial=DEFAULT_REL_THRESHOLD,
        choices=[(g.value, f"{g.value} ({g.label})") for g in RelevanceGrade if g.value >= 1],
        help_text="P, R and MAP count a passage relevant when its grade is at least this.",
    )

    def __init__(self, *args, collection: Collection, **kwargs):
        super().__init__(*args, **kwargs)
        # An EXISTS per judge, not a count of the collection's labels: the menu costs the same at any size.
        choice_field(self, "judge").queryset = judges_with_labels(collection=collection, task="relevance")
