"""One importer per kind of uploaded file: the checks of its import command, then the service the command
calls. The collection's own files and crowd's CONE-RAG files are the console's; each label family's come
from its declaration (`FileKind.importer`, in `annotation/<family>/family.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.families import FILE_KINDS
from annotation.labels.family import FileKind
from annotation.labels.files import Upload, UploadRefused, judge_named
from annotation.models import Collection, Judge
from annotation.services import ImportResult
from console.models import ImportJob
from core.progress import Progress
from crowd.cone_rag.io import cone_rag_labels_import, cone_rag_responses_import, parse_aliases


@dataclass(frozen=True)
class KindRow:
    """One line of the outcome table: what the import did to one kind of record."""

    kind: str
    created: int
    updated: int
    unchanged: int
    deleted: int


def kind_rows(result: ImportResult, default: str, prefix: str = "") -> list[KindRow]:
    return [
        KindRow(prefix + kind, c.created, c.updated, c.unchanged, c.deleted)
        for kind, c in result.by_kind(default).items()
    ]


# --- One importer per kind: the checks of its command, then its service ------------------------------

# An importer gets the stored file, the collection, the form's options, the file's own name and the
# progress hook (nuggetizer's and CONE-RAG's importers ignore it: their pages show the heartbeat).
Importer = Callable[[Path, Collection, dict[str, Any], str, Progress], list[KindRow]]


def _topics(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    return kind_rows(topics_import(path=path, collection=collection, progress=progress), "topics")


def _passages(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    return kind_rows(passages_import(path=path, collection=collection, progress=progress), "passages")


def _run(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    results = run_import(
        path=path,
        collection=collection,
        name=options.get("run_name") or None,
        group=options.get("group", ""),
        progress=progress,
    )
    return [
        row for run, result in results for row in kind_rows(result, "rankings", prefix=f"run {run.name}: ")
    ]


def _cone_rag_responses(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    return kind_rows(cone_rag_responses_import(path=path, collection=collection), "responses")


def _cone_rag_labels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
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


def _label_file(
    file: FileKind,
    path: Path,
    collection: Collection,
    options: dict[str, Any],
    file_name: str,
    progress: Progress,
) -> list[KindRow]:
    upload = Upload(path=path, collection=collection, options=options, file_name=file_name, progress=progress)
    return kind_rows(file.importer(upload), file.records)


IMPORTERS: dict[str, Importer] = {
    ImportJob.Kind.TOPICS: _topics,
    ImportJob.Kind.PASSAGES: _passages,
    ImportJob.Kind.RUN: _run,
    **{kind: partial(_label_file, file) for kind, file in FILE_KINDS.items()},
    ImportJob.Kind.CONE_RAG_RESPONSES: _cone_rag_responses,
    ImportJob.Kind.CONE_RAG_LABELS: _cone_rag_labels,
}
