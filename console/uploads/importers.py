"""One importer per kind of uploaded file: the checks of its import command, then the service the command
calls (annotation's files, nuggetizer's, and crowd's CONE-RAG files)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, Judge
from annotation.nuggets.io import gold_responses_import, nuggets_import
from annotation.ptkb.io import ptkb_qrels_import
from annotation.rag_nuggets.io import assignments_import, created_nuggets_import
from annotation.relevance.io import qrels_import
from annotation.services import ImportResult, import_judge_get_or_create
from annotation.support.io import support_labels_import
from console.models import ImportJob
from core.progress import Progress
from crowd.cone_rag.io import cone_rag_labels_import, cone_rag_responses_import, parse_aliases


class UploadRefused(Exception):
    """The upload cannot be imported as asked (a judge of the wrong kind, a missing option)."""


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


def judge_named(name: str) -> Judge:
    judge = Judge.objects.filter(name=name).first()
    if judge is None:
        known = ", ".join(Judge.objects.order_by("name").values_list("name", flat=True)[:10]) or "none yet"
        raise UploadRefused(f"no judge named {name!r}; known judges: {known}")
    return judge


def file_judge(options: dict[str, Any], file_name: str) -> Judge:
    """The judge a file is imported as (kind, model and prompt version from the form), refused by the
    same rule as the import commands' --judge and --judge-kind."""
    try:
        return import_judge_get_or_create(
            name=options["judge"],
            kind=options.get("judge_kind") or None,
            model=options.get("model", ""),
            prompt_version=options.get("prompt_version", ""),
            source=file_name,
        )
    except ImportJudgeRefused as exc:
        raise UploadRefused(str(exc)) from None


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


def _qrels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    result = qrels_import(
        path=path,
        collection=collection,
        judge=file_judge(options, file_name),
        require_passages=bool(options.get("require_passages")),
        replace=bool(options.get("replace")),
        progress=progress,
    )
    return kind_rows(result, "judgments")


def _ptkb_qrels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    result = ptkb_qrels_import(
        path=path,
        collection=collection,
        judge=file_judge(options, file_name),
        replace=bool(options.get("replace")),
    )
    return kind_rows(result, "PTKB judgments")


def _nuggets(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    original = judge_named(options["dedup_of"]) if options.get("dedup_of") else None
    if original is not None and original.name == options["judge"]:
        raise UploadRefused("the de-duplicated set must belong to another judge than the set it reduces")
    judge = file_judge(options, file_name)
    result = nuggets_import(
        path=path,
        collection=collection,
        judge=judge,
        fmt=options.get("fmt", "jsonl"),
        dedup_of=original,
        progress=progress,
    )
    return kind_rows(result, "nuggets")


def _gold_responses(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    judge = file_judge(options, file_name)
    name = options.get("nugget_judge")
    if name and options.get("fmt") == "cone-rag" and not Judge.objects.filter(name=name).exists():
        # CONE-RAG names nuggets by text: a new nugget judge gets its nuggets from the file.
        nuggets_of: Judge | None = file_judge({"judge": name}, file_name)
    else:
        nuggets_of = judge_named(name) if name else None
    result = gold_responses_import(
        path=path,
        collection=collection,
        judge=judge,
        nugget_judge=nuggets_of,
        fmt=options.get("fmt", "jsonl"),
    )
    return kind_rows(result, "gold responses")


def _support_labels(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    judge = file_judge(options, file_name)
    result = support_labels_import(path=path, collection=collection, judge=judge, progress=progress)
    return kind_rows(result, "support labels")


def _nuggetizer_nuggets(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    result = created_nuggets_import(path=path, collection=collection, judge=file_judge(options, file_name))
    return kind_rows(result, "nuggets")


def _nugget_assignments(
    path: Path, collection: Collection, options: dict[str, Any], file_name: str, progress: Progress
) -> list[KindRow]:
    """The checks of `import_nugget_assignments`, then its service."""
    owner = judge_named(options["nugget_judge"]) if options.get("nugget_judge") else None
    if owner is not None and owner.name == options["judge"]:
        raise UploadRefused("the nugget judge is the judge itself: leave it empty")
    result = assignments_import(
        path=path, collection=collection, judge=file_judge(options, file_name), nuggets_judge=owner
    )
    return kind_rows(result, "assignments")


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


IMPORTERS: dict[str, Importer] = {
    ImportJob.Kind.TOPICS: _topics,
    ImportJob.Kind.PASSAGES: _passages,
    ImportJob.Kind.RUN: _run,
    ImportJob.Kind.QRELS: _qrels,
    ImportJob.Kind.PTKB_QRELS: _ptkb_qrels,
    ImportJob.Kind.NUGGETS: _nuggets,
    ImportJob.Kind.GOLD_RESPONSES: _gold_responses,
    ImportJob.Kind.SUPPORT_LABELS: _support_labels,
    ImportJob.Kind.CONE_RAG_RESPONSES: _cone_rag_responses,
    ImportJob.Kind.CONE_RAG_LABELS: _cone_rag_labels,
    ImportJob.Kind.NUGGETIZER_NUGGETS: _nuggetizer_nuggets,
    ImportJob.Kind.NUGGET_ASSIGNMENTS: _nugget_assignments,
}
