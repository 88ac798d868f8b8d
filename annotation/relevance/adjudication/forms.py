"""The organiser's form for assigning an adjudication: validation only, the service writes."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Judge
from annotation.relevance.adjudication.rules import DisputeRule


class AdjudicationForm(forms.Form):
    judges = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="The judges whose grades are compared: at least two.",
    )
    min_difference = forms.IntegerField(
        min_value=1, max_value=4, initial=2, label="Disputed from a difference of (grades)"
    )
    across_threshold = forms.BooleanField(
        required=False, label="Also disputed when some judges find the pair relevant and some do not"
    )
    relevant_from = forms.IntegerField(min_value=1, max_value=4, initial=2, label="Relevant from grade")
    adjudicator = forms.ModelChoiceField(queryset=get_user_model().objects.none(), to_field_name="username")
    name = forms.CharField(
        max_length=200, initial="adjudicated", help_text="The judge the adjudication writes."
    )
    show_grades = forms.BooleanField(required=False, label="Show the adjudicator the earlier grades")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judges = self.fields["judges"]
        assert isinstance(judges, forms.ModelMultipleChoiceField)
        graded = judges_with_labels(collection=collection, task="relevance")
        judges.queryset = graded.exclude(kind=Judge.Kind.ADJUDICATED)
        adjudicator = self.fields["adjudicator"]
        assert isinstance(adjudicator, forms.ModelChoiceField)
        adjudicator.queryset = get_user_model().objects.filter(is_active=True).order_by("username")

    def rule(self) -> DisputeRule:
        data = self.cleaned_data
        return DisputeRule(
            min_difference=data["min_difference"],
            across_threshold=data["across_threshold"],
            relevant_from=data["relevant_from"],
        )
