"""nuggetizer's created nuggets and assignments on the organiser's upload page, through the services the
import commands call (registered with the console at start-up, as the crowd app registers its files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.console.forms import upload_kind_register
from annotation.console.uploads import (
    KindRow,
    UploadRefused,
    file_judge,
    importer_register,
    judge_named,
    kind_rows,
)
from annotation.models import Collection, ImportJob
from annotation.rag_nuggets.io import assignments_import, created_nuggets_import

JUDGE_OPTIONS = ("judge", "judge_kind", "model", "prompt_version")


def created_nuggets_upload(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str
) -> list[KindRow]:
    result = created_nuggets_import(path=path, collection=collection, judge=file_judge(options, file_name))
    return kind_rows(result, "nuggets")


def assignments_upload(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str
) -> list[KindRow]:
    """The checks of `import_nugget_assignments`, then its service."""
    owner = judge_named(options["nugget_judge"]) if options.get("nugget_judge") else None
    if owner is not None and owner.name == options["judge"]:
        raise UploadRefused("the nugget judge is the judge itself: leave it empty")
    result = assignments_import(
        path=path, collection=collection, judge=file_judge(options, file_name), nuggets_judge=owner
    )
    return kind_rows(result, "assignments")


def register() -> None:
    importer_register(kind=ImportJob.Kind.NUGGETIZER_NUGGETS, importer=created_nuggets_upload)
    upload_kind_register(kind=ImportJob.Kind.NUGGETIZER_NUGGETS, options=JUDGE_OPTIONS, required=("judge",))
    importer_register(kind=ImportJob.Kind.NUGGET_ASSIGNMENTS, importer=assignments_upload)
    upload_kind_register(
        kind=ImportJob.Kind.NUGGET_ASSIGNMENTS, options=(*JUDGE_OPTIONS, "nugget_judge"), required=("judge",)
    )
