"""Forms of the organiser's console: validation only; the services write."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.collection.forms import TopicNumbersField, TurnIdsField
from annotation.families import FILE_KINDS
from annotation.judge_menus import judges_with_labels
from annotation.models import Assignment, Collection, Condition, Judge, Pool
from annotation.nuggets.formats import FORMATS
from annotation.selectors import UnknownTopics, topics_named
from annotation.support.services import post_edit_judges
from annotation.typed import choice_field
from console import selectors
from core.form_fields import ModelMultipleChoiceField
from core.wording import plural


class CollectionForm(forms.Form):
    name = forms.SlugField(
        max_length=100, help_text="Letters, digits, '-' and '_' (it names the collection in URLs)."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


def _graded(judge: Judge) -> str:
    return f"{judge.name} ({plural(getattr(judge, 'labels', 0), 'grade')})"


class PoolForm(forms.Form):
    name = forms.SlugField(max_length=100)
    depth = forms.IntegerField(
        min_value=1, max_value=1000, initial=30, help_text="How deep each run is read."
    )
    adaptive = forms.BooleanField(
        required=False, help_text="iKAT 2024: the head always, deeper ranks by filter."
    )
    always_depth = forms.IntegerField(min_value=0, max_value=1000, initial=5, required=False)
    filter_judge = forms.ModelChoiceField(queryset=Judge.objects.none(), required=False)
    min_grade = forms.IntegerField(min_value=0, max_value=4, required=False, initial=2)
    turns = TurnIdsField()
    replace = forms.BooleanField(required=False, help_text="Rebuild a pool of this name.")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "filter_judge").queryset = selectors.relevance_judges(collection=collection)
        choice_field(self, "filter_judge").label_from_instance = _graded  # type: ignore[method-assign,assignment]

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if data.get("adaptive"):
            if data.get("filter_judge") is None:
                self.add_error("filter_judge", "adaptive pooling needs a filter judge")
            if data.get("min_grade") is None:
                self.add_error("min_grade", "adaptive pooling needs a minimum grade")
            if data.get("always_depth") is None:
                data["always_depth"] = 5
        data["turn_ids"] = data.get("turns")
        return data


class RelevanceWorkForm(forms.Form):
    pool = forms.ModelChoiceField(queryset=Pool.objects.none())
    name = forms.SlugField(max_length=100, help_text="Name of the assignment.")
    assessors = ModelMultipleChoiceField(queryset=selectors.assessors(), widget=forms.CheckboxSelectMultiple)
    unit_kind = forms.ChoiceField(choices=Assignment.UnitKind.choices, initial=Assignment.UnitKind.TURN)
    redundancy = forms.IntegerField(min_value=1, max_value=20, initial=1, help_text="Assessors per unit.")
    lease_minutes = forms.IntegerField(min_value=1, max_value=7 * 24 * 60, initial=60)
    with_ptkb = forms.BooleanField(required=False, initial=True, label="PTKB step per turn")
    gold_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        help_text="Plant gold: pairs this reference judge graded, among the assessors' own.",
    )
    gold_share = forms.FloatField(
        required=False, min_value=0.01, max_value=0.5, help_text="Share of gold, e.g. 0.05."
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "pool").queryset = Pool.objects.filter(collection=collection).select_related(
            "collection"
        )
        choice_field(self, "assessors").queryset = selectors.assessors()
        # Only a judge with grades here has pairs to plant.
        choice_field(self, "gold_judge").queryset = judges_with_labels(
            collection=collection, task="relevance"
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if (
            data.get("gold_judge") is not None
            and data.get("gold_share") is None
            and "gold_share" not in self.errors
        ):
            self.add_error("gold_share", "give the share of gold, e.g. 0.05")
        if (
            data.get("gold_judge") is None
            and data.get("gold_share") is not None
            and "gold_judge" not in self.errors
        ):
            self.add_error("gold_judge", "choose the reference judge whose grades are the gold")
        return data


class SupportWorkForm(forms.Form):
    assessors = ModelMultipleChoiceField(queryset=selectors.assessors(), widget=forms.CheckboxSelectMultiple)
    condition = forms.ChoiceField(
        choices=[(c.value, c.label) for c in (Condition.SCRATCH, Condition.POST_EDIT)]
    )
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(), required=False, help_text="Post-editing: whose labels are shown."
    )
    topics = TopicNumbersField()
    max_citations = forms.IntegerField(min_value=1, max_value=20, required=False)
    switch = forms.BooleanField(
        required=False,
        label="Switch condition",
        help_text="Confirm: topics an assessor has in the other condition switch to this one (never once "
        "they judged a unit of it).",
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "assessors").queryset = selectors.assessors()
        choice_field(self, "machine_judge").queryset = post_edit_judges(collection=collection)
        self.collection = collection

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if data.get("condition") == Condition.POST_EDIT and not data.get("machine_judge"):
            self.add_error("machine_judge", "post-editing needs the judge whose labels are shown")
        if "topics" in data:
            try:
                data["topics"] = topics_named(collection=self.collection, numbers=data["topics"])
            except UnknownTopics as exc:
                self.add_error("topics", str(exc))
        return data


# The downloads: each label family's file it gives out (its declaration's exporter), then the console's
# own judgment log.
JUDGMENT_LOG = "judgment-log"
EXPORT_KINDS = {
    **{kind: file.title for kind, file in FILE_KINDS.items() if file.exporter is not None},
    JUDGMENT_LOG: "Judgment log (CSV)",
}


class ExportForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.all(), to_field_name="name", required=False)
    fmt = forms.ChoiceField(choices=[(f, f) for f in FORMATS], required=False)
    dedup = forms.BooleanField(required=False)
    nugget_judge = forms.ModelChoiceField(queryset=Judge.objects.all(), to_field_name="name", required=False)
    include_gold = forms.BooleanField(required=False)

    def __init__(self, *args: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kind = kind

    def clean(self) -> dict[str, object]:
        super().clean()
        data = self.cleaned_data
        if self.kind != JUDGMENT_LOG and data.get("judge") is None and "judge" not in self.errors:
            self.add_error("judge", "choose the judge whose labels to download")
        data["fmt"] = data.get("fmt") or "jsonl"
        return data
