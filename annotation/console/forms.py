"""Forms of the organiser's console: validation only; the services write."""

from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address

from annotation.console import selectors
from annotation.console.uploads import IMPORTERS
from annotation.formats.nuggets import FORMATS
from annotation.judge_access import FILE_KINDS
from annotation.models import Assignment, Collection, ImportJob, Judge, Pool, SupportAssignment, Topic
from annotation.typed import choice_field
from core.form_fields import ModelMultipleChoiceField
from core.wording import plural

# Which options each kind of upload reads (the rest of the form is ignored for it), and which it needs.
UPLOAD_OPTIONS: dict[str, tuple[str, ...]] = {
    ImportJob.Kind.TOPICS: (),
    ImportJob.Kind.PASSAGES: (),
    ImportJob.Kind.RUN: ("run_name", "group"),
    ImportJob.Kind.QRELS: ("judge", "replace", "require_passages", "judge_kind", "model", "prompt_version"),
    ImportJob.Kind.PTKB_QRELS: ("judge", "replace", "judge_kind", "model", "prompt_version"),
    ImportJob.Kind.NUGGETS: ("judge", "fmt", "dedup_of", "judge_kind", "model", "prompt_version"),
    ImportJob.Kind.GOLD_RESPONSES: ("judge", "nugget_judge", "fmt", "judge_kind", "model", "prompt_version"),
    ImportJob.Kind.SUPPORT_LABELS: ("judge", "judge_kind", "model", "prompt_version"),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    ImportJob.Kind.QRELS: ("judge",),
    ImportJob.Kind.PTKB_QRELS: ("judge",),
    ImportJob.Kind.NUGGETS: ("judge",),
    ImportJob.Kind.GOLD_RESPONSES: ("judge",),
    ImportJob.Kind.SUPPORT_LABELS: ("judge",),
}


# Fields of the upload form that only the kinds of other apps read, added by their registration.
EXTRA_FIELDS: dict[str, forms.Field] = {}


def upload_kind_register(
    *,
    kind: str,
    options: tuple[str, ...],
    required: tuple[str, ...] = (),
    fields: dict[str, forms.Field] | None = None,
) -> None:
    """Which fields of the upload form a kind of file another app imports reads, which it needs, and the
    fields of its own it adds to the form (its importer: annotation.console.uploads.importer_register)."""
    UPLOAD_OPTIONS[kind] = options
    REQUIRED[kind] = required
    EXTRA_FIELDS.update(fields or {})


class CollectionForm(forms.Form):
    name = forms.SlugField(
        max_length=100, help_text="Letters, digits, '-' and '_' (it names the collection in URLs)."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class UploadForm(forms.Form):
    kind = forms.ChoiceField(choices=ImportJob.Kind.choices)
    file = forms.FileField()
    judge = forms.CharField(
        required=False, max_length=200, help_text="Judge the labels belong to (created if new)."
    )
    fmt = forms.ChoiceField(
        choices=[(f, f) for f in FORMATS], initial="jsonl", label="Format", required=False
    )
    replace = forms.BooleanField(required=False, help_text="Delete this judge's labels the file lacks.")
    require_passages = forms.BooleanField(required=False, help_text="Reject qrels of passages not loaded.")
    dedup_of = forms.CharField(
        required=False, max_length=200, help_text="Nuggets: the set this file de-duplicates."
    )
    nugget_judge = forms.CharField(
        required=False, max_length=200, help_text="Judge whose nuggets the file refers to."
    )
    judge_kind = forms.ChoiceField(
        choices=[("", "Default (a new judge: imported file; an existing one: as it is)")]
        + [(k, Judge.Kind(k).label) for k in FILE_KINDS],
        required=False,
        label="Judge kind",
        help_text="What the labels are: an LLM's labels are compared with the assessors' on the agreement pages.",
    )
    model = forms.CharField(required=False, max_length=200, help_text="Model of an LLM or NLI judge.")
    prompt_version = forms.CharField(
        required=False, max_length=100, help_text="Prompt version of an LLM judge."
    )
    run_name = forms.CharField(
        required=False, max_length=200, help_text="Run: name (default: from the file)."
    )
    group = forms.CharField(required=False, max_length=200, help_text="Run: the group that submitted it.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in EXTRA_FIELDS.items():
            self.fields[name] = copy.deepcopy(field)
        # Only the kinds some installed app can import (the CONE-RAG files come with the crowd app).
        kind = self.fields["kind"]
        assert isinstance(kind, forms.ChoiceField)
        kind.choices = [(k, label) for k, label in ImportJob.Kind.choices if k in IMPORTERS]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = str(data.get("kind") or "")
        for name in REQUIRED.get(kind, ()):
            if not data.get(name):
                self.add_error(
                    name, f"a {ImportJob.Kind(kind).label.split(' (')[0].lower()} upload needs this"
                )
        return data

    def options(self) -> dict[str, Any]:
        """Only the options the chosen kind reads, so a job records what its import was asked."""
        data = self.cleaned_data
        names = UPLOAD_OPTIONS[data["kind"]]
        return {name: data[name] for name in names if data.get(name) not in (None, "", [], False)}


def _graded(judge: Judge) -> str:
    return f"{judge.name} ({plural(getattr(judge, 'n', 0), 'grade')})"


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
    turns = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Only these turn ids (space or line separated); empty: every turn.",
    )
    replace = forms.BooleanField(required=False, help_text="Rebuild a pool of this name.")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice_field(self, "filter_judge").queryset = selectors.relevance_judges(collection=collection)
        choice_field(self, "filter_judge").label_from_instance = _graded  # type: ignore[method-assign,assignment]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("adaptive"):
            if data.get("filter_judge") is None:
                self.add_error("filter_judge", "adaptive pooling needs a filter judge")
            if data.get("min_grade") is None:
                self.add_error("min_grade", "adaptive pooling needs a minimum grade")
            if data.get("always_depth") is None:
                data["always_depth"] = 5
        data["turn_ids"] = data.get("turns", "").split() or None
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
        queryset=Judge.objects.all(),
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
        choices=[
            (c.value, c.label)
            for c in (SupportAssignment.Condition.SCRATCH, SupportAssignment.Condition.POST_EDIT)
        ]
    )
    machine_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(), required=False, help_text="Post-editing: whose labels are shown."
    )
    topics = ModelMultipleChoiceField(
        queryset=Topic.objects.none(), required=False, help_text="Empty: every topic of the collection."
    )
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
        choice_field(self, "machine_judge").queryset = selectors.support_judges(collection=collection)
        choice_field(self, "topics").queryset = collection.topics.all()
        self.collection = collection

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("condition") == SupportAssignment.Condition.POST_EDIT and not data.get("machine_judge"):
            self.add_error("machine_judge", "post-editing needs the judge whose labels are shown")
        if not data.get("topics"):
            data["topics"] = self.collection.topics.all()
        return data


class PersonForm(forms.Form):
    username = forms.RegexField(regex=r"^[\w.@+-]+\Z", max_length=150)
    email = forms.EmailField(required=False)
    role = forms.ChoiceField(choices=[("assessor", "Assessor"), ("organiser", "Organiser")])
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        min_length=8,
        help_text="Leave empty to invite: you get a one-time link on which they choose their password.",
    )


class LoginUnlockForm(forms.Form):
    kind = forms.ChoiceField(choices=[("name", "user name"), ("address", "address")])
    value = forms.CharField(max_length=255)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("kind") == "address" and data.get("value"):
            try:
                validate_ipv46_address(data["value"])
            except ValidationError:
                self.add_error("value", "not an IP address")
        return data


EXPORT_KINDS = {
    "qrels": "Relevance qrels (TREC)",
    "ptkb-qrels": "PTKB qrels",
    "nuggets": "Gold nuggets",
    "gold-responses": "Gold responses",
    "support-labels": "Support labels (JSONL)",
    "judgment-log": "Judgment log (CSV)",
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

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.kind != "judgment-log" and data.get("judge") is None and "judge" not in self.errors:
            self.add_error("judge", "choose the judge whose labels to download")
        data["fmt"] = data.get("fmt") or "jsonl"
        return data
