"""The form that draws a human sample from the browser: the choices `sample_for_humans` takes for
relevance, validated here, drawn by the same service (`services.human_sample_create`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotation.judge_menus import judge_fields, judges_with_labels
from annotation.models import Collection, Judge, Pool
from annotation.typed import choice_field
from core.form_fields import ModelMultipleChoiceField
from judging.measures.hybrid.sampling import STRATEGIES
from judging.models import HumanSample


class SampleDrawForm(forms.Form):
    """Draw `budget` turns of a pool for people to judge and hand them to assessors as one assignment."""

    prefix = "draw"
    name = forms.SlugField(max_length=100, help_text="Names the sample and the assignment it becomes.")
    pool = forms.ModelChoiceField(queryset=Pool.objects.none(), to_field_name="name")
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        help_text="The turns it labelled are the population the sample is drawn from.",
    )
    budget = forms.IntegerField(min_value=1, help_text="Turns to draw (on average, for uncertainty).")
    strategy = forms.ChoiceField(
        choices=[(s, HumanSample.Strategy(s).label) for s in STRATEGIES], initial=STRATEGIES[0]
    )
    confidence_judges = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        help_text="uncertainty: other machine judges whose disagreement with the machine judge is its uncertainty; "
        "without them, units are drawn in proportion to the correction the machine's own labels lead one to expect.",
    )
    assessors = ModelMultipleChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        widget=forms.CheckboxSelectMultiple,
    )
    seed = forms.IntegerField(required=False, help_text="Optional: the same seed draws the same sample.")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "pool").queryset = (
            Pool.objects.filter(collection=collection).select_related("collection").order_by("name")
        )
        judge_fields(
            self,
            judges_with_labels(collection=collection, task="relevance"),
            ["machine_judge", "confidence_judges"],
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        machine, others = data.get("machine_judge"), list(data.get("confidence_judges") or [])
        if machine is not None and machine in others:
            self.add_error("confidence_judges", "the machine judge cannot be its own confidence judge")
        return data
