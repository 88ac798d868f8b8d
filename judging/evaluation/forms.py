"""The form of the run-evaluation page: the judge whose qrels score the runs, and the relevance threshold."""

from __future__ import annotations

from django import forms
from django.db.models import Count

from annotation.models import Collection, Judge, RelevanceGrade
from annotation.typed import choice_field
from judging.scores.relevance import DEFAULT_REL_THRESHOLD


def _judges_with_labels(collection: Collection):
    return (
        Judge.objects.filter(relevancejudgments__turn__collection=collection)
        .annotate(n_labels=Count("relevancejudgments"))
        .order_by("name")
    )


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
        choice_field(self, "judge").queryset = _judges_with_labels(collection)
