"""A label family's files as the console hands them over: an upload to take in, a download to write.

Each family's `io.py` reads an `Upload` (the stored file, its collection and the options the upload form
gave) into the database through the same service its import command calls, and writes a `Download`
through the function its export command calls; its `family.py` names both in a `FileKind`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, Judge
from annotation.services import import_judge_get_or_create
from core.progress import Progress


class UploadRefused(Exception):
    """The upload cannot be imported as asked (a judge of the wrong kind, a missing option)."""


@dataclass(frozen=True)
class Upload:
    """An uploaded file waiting for its import: where it is stored, its collection, the form's options
    (judge, judge kind, model, prompt version and the options its kind reads), its own name, and the
    progress hook."""

    path: Path
    collection: Collection
    options: dict[str, Any]
    file_name: str
    progress: Progress

    def judge(self, name: str | None = None) -> Judge:
        """The judge the file is imported as (kind, model and prompt version from the form), refused by the
        same rule as the import commands' --judge and --judge-kind; with `name`, another judge the file
        refers to, created as an imported file if new."""
        options = self.options if name is None else {"judge": name}
        try:
            return import_judge_get_or_create(
                name=options["judge"],
                kind=options.get("judge_kind") or None,
                model=options.get("model", ""),
                prompt_version=options.get("prompt_version", ""),
                source=self.file_name,
            )
        except ImportJudgeRefused as exc:
            raise UploadRefused(str(exc)) from None


def judge_named(name: str) -> Judge:
    """An existing judge a file refers to by name; refused, naming some known judges, if there is none."""
    judge = Judge.objects.filter(name=name).first()
    if judge is None:
        known = ", ".join(Judge.objects.order_by("name").values_list("name", flat=True)[:10]) or "none yet"
        raise UploadRefused(f"no judge named {name!r}; known judges: {known}")
    return judge


@dataclass(frozen=True)
class Download:
    """A download the console asked for: the collection, the judge whose labels it holds, and the
    download form's other choices (`fmt`, `dedup`, `nugget_judge`, `include_gold`)."""

    collection: Collection
    judge: Judge
    options: dict[str, Any]


@dataclass(frozen=True)
class Export:
    """A download being written: its text in blocks, read from the database as the client takes them (a
    file of a million labels is never whole in memory), and how its file name ends after the collection's
    and judge's names."""

    body: Iterable[str]
    ending: str
