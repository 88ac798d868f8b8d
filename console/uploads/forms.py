"""The upload form: the kind of file, the file, and the options each kind reads."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.families import FILE_KINDS
from annotation.judge_access import FILE_KINDS as JUDGE_KINDS
from annotation.models import Judge
from annotation.nuggets.formats import FORMATS
from console.models import ImportJob, upload_kinds

# The options of a judge's labels: the judge, its kind, and an LLM's model and prompt version.
JUDGE_OPTIONS = ("judge", "judge_kind", "model", "prompt_version")

# Which options each kind of upload reads (the rest of the form is ignored for it), and which it needs:
# a label family's file reads the judge's options and those its declaration names, and needs the judge.
UPLOAD_OPTIONS: dict[str, tuple[str, ...]] = {
    ImportJob.Kind.TOPICS: (),
    ImportJob.Kind.PASSAGES: (),
    ImportJob.Kind.RUN: ("run_name", "group"),
    **{kind: (*JUDGE_OPTIONS, *file.options) for kind, file in FILE_KINDS.items()},
    ImportJob.Kind.CONE_RAG_RESPONSES: (),
    ImportJob.Kind.CONE_RAG_LABELS: ("nugget_judge", "judge", "aliases"),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(FILE_KINDS, ("judge",)),
    ImportJob.Kind.CONE_RAG_LABELS: ("nugget_judge", "aliases"),
}


class AliasLinesField(forms.CharField):
    """The CONE-RAG labels' run aliases, one ALIAS=RUN_NAME per line: the non-empty lines, stripped."""

    def clean(self, value: Any) -> list[str]:
        text = super().clean(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class UploadForm(forms.Form):
    kind = forms.ChoiceField(choices=upload_kinds)
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
        + [(k, Judge.Kind(k).label) for k in JUDGE_KINDS],
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

    aliases = AliasLinesField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="CONE-RAG labels: one ALIAS=RUN_NAME per line.",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind = str(data.get("kind") or "")
        for name in REQUIRED.get(kind, ()):
            if not data.get(name):
                title = dict(upload_kinds())[kind]
                self.add_error(name, f"a {title.split(' (')[0].lower()} upload needs this")
        return data

    def options(self) -> dict[str, Any]:
        """Only the options the chosen kind reads, so a job records what its import was asked."""
        data = self.cleaned_data
        names = UPLOAD_OPTIONS[data["kind"]]
        return {name: data[name] for name in names if data.get(name) not in (None, "", [], False)}
