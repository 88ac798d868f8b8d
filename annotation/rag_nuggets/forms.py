"""Forms of the TREC RAG nugget pages: the organiser's hand-out, and the labels an assessor posts."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.http import QueryDict

from annotation.judge_menus import judges_with_labels
from annotation.models import (
    Collection,
    Condition,
    Judge,
    Topic,
)
from annotation.rag_nuggets.selectors import STEPS
from annotation.typed import choice_field


class HandOutForm(forms.Form):
    step = forms.ChoiceField(choices=[(step, kind.label) for step, kind in STEPS.items()])
    topics = forms.ModelMultipleChoiceField(queryset=Topic.objects.none())
    users = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"), label="Assessors"
    )
    source_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(), help_text="The nugget set the assessors work on."
    )
    condition = forms.ChoiceField(
        choices=[(c.value, c.label) for c in (Condition.SCRATCH, Condition.POST_EDIT)],
        initial=Condition.SCRATCH,
    )
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        required=False,
        help_text="Post-editing labels: the machine judge whose label is shown and preselected.",
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "topics").queryset = collection.topics.order_by("number")
        choice_field(self, "source_judge").queryset = judges_with_labels(
            collection=collection, task="nuggets"
        )
        # A judge with vital/okay or assignment labels here; whether it has them on the chosen set and
        # topic is the service's check.
        labelled = judges_with_labels(collection=collection, task=("nugget-importance", "nugget-assignment"))
        choice_field(self, "machine_judge").queryset = labelled.exclude(kind=Judge.Kind.ASSESSOR)

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if data.get("condition") == Condition.POST_EDIT and not data.get("machine_judge"):
            self.add_error("machine_judge", "Post-editing needs the machine judge whose labels are shown.")
        return data


class TimeForm(forms.Form):
    time_spent_ms = forms.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False)


def posted_labels(data: QueryDict, allowed: list[str]) -> dict[int, str]:
    """The `label-<nugget id>` fields of a labels page as {nugget id: label}; ValidationError on a
    field whose id is not a number or whose label is off the scale. Which ids belong is the service's."""
    labels: dict[int, str] = {}
    for name in data:
        value = data.get(name, "")
        if not name.startswith("label-"):
            continue
        raw = name.removeprefix("label-")
        # ASCII digits only: '²' passes isdigit() but int() cannot read it.
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
            raise forms.ValidationError(f"{name[:40]!r} does not name a nugget")
        if value not in allowed:
            raise forms.ValidationError(f"a label must be one of {', '.join(allowed)}")
        labels[int(raw)] = value
    return labels
