"""Relevance files in and out: passage qrels (import and export), and the judgment log.

The text of qrels is parsed in annotation/relevance/formats.py; this module checks it against the
collection and writes it, and writes the database back out in the same shape. The judgment log is a CSV of every human or machine label with
who gave it, how long it took and when, for studies of assessor effort and for audits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypedDict

from django.db import transaction
from django.db.models import QuerySet

from annotation.formats.base import MAX_PROBLEMS, Problems
from annotation.labels.files import Download, Export, Upload
from annotation.models import (
    Collection,
    Judge,
    PtkbJudgment,
    RelevanceJudgment,
)
from annotation.relevance.formats import qrels_records
from annotation.relevance.writer import relevance_judgments_upsert_stage, relevance_stage
from annotation.services import JUDGMENTS, ImportResult, TurnPks
from core.csv_safe import SafeDictWriter
from core.ordering import natural_key

# --- Passage qrels ---------------------------------------------------------------------------------


@transaction.atomic
def qrels_import(
    *,
    path: str | Path,
    collection: Collection,
    judge: Judge,
    require_passages: bool = False,
    replace: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Load TREC qrels as relevance judgments of `judge`.

    Judgments attach to passage ids, so qrels of passages whose text the collection lacks are fine
    unless `require_passages`. With `replace`, the judge's judgments on this collection that the file
    does not hold are deleted, so the judge's labels equal the file. Every problem of the file, its
    syntax and its turns (and passages) alike, is reported in one pass. `progress(done, total)` counts
    the file's grades stored: none once the file is checked, all once they are written (one upsert).

    The file is read a line at a time into a stage in the database (RelevanceStage), in batches, and
    checked and written there, so a file of any size takes the same memory; the transaction keeps the
    import all or nothing.
    """
    pathname = str(path)
    problems = Problems(pathname)
    turns = TurnPks(collection, problems)
    with relevance_stage() as stage:
        stage.fill(
            (record.line, turn_pk, record.passage_id, record.grade)
            for record in qrels_records(path, problems=problems)
            if (turn_pk := turns.get(record.turn_id, record.line)) is not None
        )
        stage.seal()
        count, repeated = stage.repeated(limit=MAX_PROBLEMS)
        for line, turn_pk, passage_id, first in repeated:
            problems.add(line, f"{turns.name(turn_pk)} {passage_id} is judged twice (first on line {first})")
        problems.more += count - len(repeated)
        if require_passages:
            count, missing = stage.without_passage(collection=collection, limit=MAX_PROBLEMS)
            for line, passage_id in missing:
                problems.add(line, f"passage {passage_id} is not in collection {collection.name}")
            problems.more += count - len(missing)
        problems.raise_if_any()

        if progress is not None:
            progress(0, stage.rows)
        written = relevance_judgments_upsert_stage(
            judge=judge, collection=collection, stage=stage, replace=replace
        )
        if progress is not None:
            progress(stage.rows, stage.rows)
    result = ImportResult()
    result.count(JUDGMENTS, "created", written.created)
    result.count(JUDGMENTS, "updated", written.updated)
    result.count(JUDGMENTS, "unchanged", written.unchanged)
    if replace:
        result.count(JUDGMENTS, "deleted", written.removed)
    return result


def qrels_lines(*, collection: Collection, judge: Judge, include_gold: bool = False) -> Iterator[str]:
    """TREC qrels lines of a judge in a stable order: turn (natural order), then passage id.

    An assessor's grades of planted gold pairs are checks on the assessor, not pool work: left out
    unless `include_gold`."""
    judgments = RelevanceJudgment.objects.filter(judge=judge, turn__collection=collection)
    if not include_gold:
        judgments = judgments.filter(gold_grade__isnull=True)
    rows = list(judgments.values_list("turn__turn_id", "passage_id", "grade"))
    rows.sort(key=lambda row: (natural_key(row[0]), row[1]))
    for turn_id, passage_id, grade in rows:
        yield f"{turn_id} 0 {passage_id} {grade}\n"


# --- Judgment log ----------------------------------------------------------------------------------

LOG_TASKS = ("relevance", "ptkb")
LOG_COLUMNS = [
    "judge",
    "username",
    "judge_kind",
    "task",
    "turn",
    "unit",
    "label",
    "time_spent_ms",
    "created_at",
    "updated_at",
]


class LogRow(TypedDict):
    judge: str
    username: str
    judge_kind: str
    task: str
    turn: str
    unit: str
    label: str
    time_spent_ms: str
    created_at: str
    updated_at: str


def judgment_log_rows(
    *, collection: Collection, judge: Judge | None = None, tasks: Iterable[str] = LOG_TASKS
) -> list[LogRow]:
    """Every relevance and/or PTKB label on a collection (of one judge, or all), with effort and timestamps.

    The unit is the passage id (relevance) or the PTKB statement id (ptkb); the label is the 0-4 grade or
    0/1. Rows are ordered by task, judge name, turn (natural order), unit, so two exports diff cleanly.
    Time spent is empty when the judge did not report it (imported files, machines).
    """
    wanted = list(tasks)
    unknown = [task for task in wanted if task not in LOG_TASKS]
    if unknown:
        raise ValueError(f"unknown task {', '.join(unknown)}; expected one of {', '.join(LOG_TASKS)}")
    rows: list[tuple[tuple, LogRow]] = []
    fields = ("judge__name", "judge__user__username", "judge__kind", "turn__turn_id")
    sources: dict[str, tuple[QuerySet[Any], str, str]] = {
        "relevance": (RelevanceJudgment.objects.all(), "passage_id", "grade"),
        "ptkb": (PtkbJudgment.objects.all(), "statement__statement_id", "relevant"),
    }
    for task in wanted:
        queryset, unit_field, label_field = sources[task]
        queryset = queryset.filter(turn__collection=collection)
        if judge is not None:
            queryset = queryset.filter(judge=judge)
        for name, username, kind, turn_id, unit, label, spent, created, updated in queryset.values_list(
            *fields, unit_field, label_field, "time_spent_ms", "created_at", "updated_at"
        ):
            row: LogRow = {
                "judge": name,
                "username": username or "",
                "judge_kind": kind,
                "task": task,
                "turn": turn_id,
                "unit": unit,
                "label": str(int(label)),
                "time_spent_ms": "" if spent is None else str(spent),
                "created_at": created.isoformat(),
                "updated_at": updated.isoformat(),
            }
            rows.append(((LOG_TASKS.index(task), name, natural_key(turn_id), natural_key(unit)), row))
    rows.sort(key=lambda item: item[0])
    return [row for _key, row in rows]


def judgment_log_write(handle: IO[str], rows: Iterable[LogRow]) -> int:
    """Write the log as CSV with a header; returns the number of rows written."""
    writer = SafeDictWriter(handle, fieldnames=LOG_COLUMNS, lineterminator="\n")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


# --- The console's upload and download ------------------------------------------------------------


def qrels_upload(upload: Upload) -> ImportResult:
    return qrels_import(
        path=upload.path,
        collection=upload.collection,
        judge=upload.judge(),
        require_passages=bool(upload.options.get("require_passages")),
        replace=bool(upload.options.get("replace")),
        progress=upload.progress,
    )


def qrels_download(download: Download) -> Export:
    lines = qrels_lines(
        collection=download.collection,
        judge=download.judge,
        include_gold=bool(download.options.get("include_gold")),
    )
    return Export("".join(lines), ".qrels")
