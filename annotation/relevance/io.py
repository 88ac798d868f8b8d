"""PTKB qrels (write and read) and the judgment log: what leaves a campaign besides the passage qrels.

PTKB qrels follow the TREC qrels shape with a PTKB statement in the document column and a binary label,
`turn 0 statement_id 0|1`, as the iKAT organisers distribute PTKB statement relevance. The judgment log
is a CSV of every human or machine label with who gave it, how long it took and when, for studies of
assessor effort and for audits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypedDict

from django.db import transaction
from django.db.models import QuerySet

from annotation.formats.base import Problems, read_text
from annotation.formats.csv_safe import SafeDictWriter
from annotation.judgments import PtkbRow, ptkb_judgments_upsert
from annotation.models import Collection, Judge, PtkbJudgment, PtkbStatement, RelevanceJudgment, Turn
from annotation.selectors import natural_key
from annotation.services import ImportResult

# --- PTKB qrels ------------------------------------------------------------------------------------


def ptkb_qrels_lines(*, collection: Collection, judge: Judge) -> Iterator[str]:
    """`turn 0 statement_id 0|1` lines of a judge's PTKB labels: turns in natural order, then statement id."""
    rows = list(
        PtkbJudgment.objects.filter(judge=judge, turn__collection=collection).values_list(
            "turn__turn_id", "statement__statement_id", "relevant"
        )
    )
    rows.sort(key=lambda row: (natural_key(row[0]), natural_key(row[1])))
    for turn_id, statement_id, relevant in rows:
        yield f"{turn_id} 0 {statement_id} {int(relevant)}\n"


@dataclass
class PtkbQrelRecord:
    turn_id: str
    statement_id: str
    relevant: bool
    line: int


def parse_ptkb_qrels(path: str | Path, *, problems: Problems | None = None) -> list[PtkbQrelRecord]:
    """PTKB qrels `turn 0 statement_id 0|1`, any whitespace; every bad line is reported with its number
    (added to `problems` when given, with the good lines returned, else raised here)."""
    name = str(path)
    text = read_text(path)
    own = problems is None
    problems = Problems(name) if problems is None else problems
    records: list[PtkbQrelRecord] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            problems.add(number, f"expected 4 columns 'turn 0 statement_id 0|1', found {len(parts)}")
        elif parts[3] not in {"0", "1"}:
            problems.add(number, f"label {parts[3]!r} is not 0 or 1")
        elif (parts[0], parts[2]) in seen:
            problems.add(
                number, f"{parts[0]} {parts[2]} is labelled twice (first on line {seen[parts[0], parts[2]]})"
            )
        else:
            seen[parts[0], parts[2]] = number
            records.append(PtkbQrelRecord(parts[0], parts[2], parts[3] == "1", number))
    if own:
        problems.raise_if_any()
    return records


@transaction.atomic
def ptkb_qrels_import(
    *, path: str | Path, collection: Collection, judge: Judge, replace: bool = False
) -> ImportResult:
    """Load PTKB qrels as PTKB judgments of `judge`; all or nothing, and the same file twice changes nothing.

    Every turn must be in the collection and every statement in the PTKB of that turn's conversation;
    the file's syntax and these are checked in one pass, so every problem is reported at once.
    With `replace`, the judge's PTKB labels on this collection that the file lacks are deleted.
    """
    pathname = str(path)
    problems = Problems(pathname)
    records = parse_ptkb_qrels(path, problems=problems)
    turns = {
        t.turn_id: t
        for t in Turn.objects.filter(collection=collection, turn_id__in={r.turn_id for r in records})
    }
    statements = {
        (topic_id, statement_id): pk
        for pk, topic_id, statement_id in PtkbStatement.objects.filter(
            topic_id__in={t.topic_id for t in turns.values()}
        ).values_list("id", "topic_id", "statement_id")
    }
    units: list[tuple[int, int, bool]] = []
    for record in records:
        turn = turns.get(record.turn_id)
        if turn is None:
            problems.add(record.line, f"turn {record.turn_id} is not in collection {collection.name}")
            continue
        statement = statements.get((turn.topic_id, record.statement_id))
        if statement is None:
            problems.add(
                record.line,
                f"conversation of turn {record.turn_id} has no PTKB statement {record.statement_id}",
            )
            continue
        units.append((turn.id, statement, record.relevant))
    problems.raise_if_any()

    written = ptkb_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=[PtkbRow(turn_id, statement_id, relevant) for turn_id, statement_id, relevant in units],
        replace=replace,
    )
    result = ImportResult()
    result.created, result.updated, result.unchanged = written.created, written.updated, written.unchanged
    if replace:
        result.deleted = written.removed
    return result


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
