"""The CONE-RAG crowd files on the organiser's upload page: registered with the console at start-up,
since their import services live here and the annotation app imports nothing from this one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms

from annotation.console.forms import upload_kind_register
from annotation.console.uploads import KindRow, UploadRefused, importer_register, judge_named, kind_rows
from annotation.models import Collection, ImportJob, Judge
from crowd.cone_rag.io import cone_rag_labels_import, cone_rag_responses_import, parse_aliases


def cone_rag_responses_upload(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str
) -> list[KindRow]:
    return kind_rows(cone_rag_responses_import(path=path, collection=collection), "responses")


def cone_rag_labels_upload(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str
) -> list[KindRow]:
    """The checks of `import_cone_rag_labels`, then its service."""
    gold = judge_named(options["nugget_judge"])
    try:
        aliases = parse_aliases(list(options.get("aliases", [])))
    except ValueError as exc:
        raise UploadRefused(str(exc)) from None
    if not aliases:
        raise UploadRefused("give at least one alias line ALIAS=RUN_NAME")
    name = options.get("judge") or "mturk-majority"
    existing = Judge.objects.filter(name=name).first()
    if existing is not None and existing.kind != Judge.Kind.CROWD:
        raise UploadRefused(f"judge {name!r} exists and is a {existing.kind} judge, not a crowd judge")
    result = cone_rag_labels_import(
        path=path, collection=collection, nugget_judge=gold, label_judge_name=name, aliases=aliases
    )
    return kind_rows(result, "NtR labels")


class AliasLinesField(forms.CharField):
    """The CONE-RAG labels' run aliases, one ALIAS=RUN_NAME per line: the non-empty lines, stripped."""

    def clean(self, value: Any) -> list[str]:
        text = super().clean(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


def register() -> None:
    importer_register(kind=ImportJob.Kind.CONE_RAG_RESPONSES, importer=cone_rag_responses_upload)
    upload_kind_register(kind=ImportJob.Kind.CONE_RAG_RESPONSES, options=())
    importer_register(kind=ImportJob.Kind.CONE_RAG_LABELS, importer=cone_rag_labels_upload)
    upload_kind_register(
        kind=ImportJob.Kind.CONE_RAG_LABELS,
        options=("nugget_judge", "judge", "aliases"),
        required=("nugget_judge", "aliases"),
        fields={
            "aliases": AliasLinesField(
                required=False,
                widget=forms.Textarea(attrs={"rows": 3}),
                help_text="CONE-RAG labels: one ALIAS=RUN_NAME per line.",
            )
        },
    )
