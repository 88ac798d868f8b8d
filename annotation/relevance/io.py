"""Relevance files in and out: passage qrels (import and export), and the judgment log.

The text of qrels is parsed in annotation/relevance/formats.py; this module checks it against the
collection and writes it, and writes the database back out in the same shape. The judgment log is a CSV of every human or machine label with
who gave it, how long it took and when, for studies of assessor effort and for audits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import IO, Any, TypedDict, cast

from django.contrib.auth.models import User
from django.db import transaction

from annotation.formats.base import MAX_PROBLEMS, Problems
from annotation.labels.files import Download, Export, Upload
from annotation.models import (
    Collection,
    Judge,
    PtkbJudgment,
    PtkbStatement,
    RelevanceJudgment,
)
from annotation.relevance.formats import qrels_records
from annotation.relevance.quality.models import GoldGrade
from annotation.relevance.writer import relevance_judgments_upsert_stage, relevance_stage
from annotation.selectors import turn_places
from annotation.services import JUDGMENTS, ImportResult, TurnPks
from core.csv_safe import SafeDictWriter
from core.ordering import natural_key
from core.streaming import query_rows, text_chunks

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


# The rows of an export in turn order: the turns' places joined to the labels, so PostgreSQL sorts them and
# the rows stream; passage ids compare by code point (COLLATE "C") as Python compares strings.
_IN_TURN_ORDER = "unnest(%s::bigint[], %s::text[], %s::integer[]) AS o(pk, turn_id, place)"


def qrels_lines(*, collection: Collection, judge: Judge, include_gold: bool = False) -> Iterator[str]:
    """TREC qrels lines of a judge in a stable order: turn (natural order), then passage id, read from the
    database as they are written (a server-side cursor), so a file of any size takes the same memory.

    An assessor's grades of planted gold pairs are checks on the assessor, not pool work: left out
    unless `include_gold`."""
    turns = turn_places(collection=collection)
    gold = (
        ""
        if include_gold
        else f"AND NOT EXISTS (SELECT 1 FROM {GoldGrade._meta.db_table} g WHERE g.judgment_id = j.id)"
    )
    sql = (
        f"SELECT o.turn_id, j.passage_id, j.grade FROM {RelevanceJudgment._meta.db_table} j "
        f"JOIN {_IN_TURN_ORDER} ON o.pk = j.turn_id WHERE j.judge_id = %s {gold} "
        'ORDER BY o.place, j.passage_id COLLATE "C"'
    )
    for turn_id, passage_id, grade in query_rows(sql, [*turns, judge.pk]):
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
) -> Iterator[LogRow]:
    """Every relevance and/or PTKB label on a collection (of one judge, or all), with effort and timestamps.

    The unit is the passage id (relevance) or the PTKB statement id (ptkb); the label is the 0-4 grade or
    0/1. Rows are ordered by task, judge name, turn (natural order), unit, so two exports diff cleanly.
    Time spent is empty when the judge did not report it (imported files, machines). The rows stream from
    the database (see `judgment_log_lines`).
    """
    records = _log_records(collection, judge, _log_tasks(tasks))
    return (cast(LogRow, dict(zip(LOG_COLUMNS, record, strict=True))) for record in records)


def judgment_log_lines(
    *, collection: Collection, judge: Judge | None = None, tasks: Iterable[str] = LOG_TASKS
) -> Iterator[str]:
    """The log (`judgment_log_rows`) as CSV lines with their header, as the database sends them: a million
    labels are never whole in memory. PostgreSQL orders the rows and writes each line as
    `csv.writer` writes the row, the names people and files gave (judge, user, turn, unit) through
    `csv_cell`; the other cells are numbers, times and Assay's own words."""
    wanted = _log_tasks(tasks)
    turns = turn_places(collection=collection)
    judge_pk = None if judge is None else judge.pk
    yield ",".join(LOG_COLUMNS) + "\n"
    for task in wanted:
        name, username, kind, task_cell, turn, unit, *rest = _log_cells(task)
        cells = (
            _csv_text(name),
            _csv_text(username),
            kind,
            task_cell,
            _csv_text(turn),
            _csv_text(unit),
            *rest,
        )
        sql = f"SELECT jd.id, o.place, {unit}, {_COMMA.join(cells)} || chr(10) {_log_from(task)}"
        for (line,) in _units_in_natural_order(query_rows(sql, [task, *turns, judge_pk, judge_pk])):
            yield line


def _log_tasks(tasks: Iterable[str]) -> list[str]:
    wanted = list(tasks)
    unknown = [task for task in wanted if task not in LOG_TASKS]
    if unknown:
        raise ValueError(f"unknown task {', '.join(unknown)}; expected one of {', '.join(LOG_TASKS)}")
    return wanted


# The task's table, the unit's column and its join, the label's column.
_LOG_SOURCES = {
    "relevance": (RelevanceJudgment._meta.db_table, "j.passage_id", "", "j.grade::text"),
    "ptkb": (
        PtkbJudgment._meta.db_table,
        "s.statement_id",
        f"JOIN {PtkbStatement._meta.db_table} s ON s.id = j.statement_id",
        "j.relevant::integer::text",
    ),
}


def _iso(column: str) -> str:
    """A timestamp as Python's isoformat() writes it in UTC, made by PostgreSQL: reading a million of them
    as datetimes to format them again is most of a log's time. Without microseconds, no fraction."""
    utc = f"{column} AT TIME ZONE 'UTC'"
    return (
        f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN date_part('microseconds', {column})::bigint "
        f"%% 1000000 = 0 THEN '' ELSE to_char({utc}, '.US') END || '+00:00'"
    )


def _units_in_natural_order(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Rows (judge pk, turn place, unit, *rest) in the database's order of judge and turn, each judge's turn
    sorted by unit in natural order here: `rest` of each. Only one turn's labels are held at once; an SQL
    key of natural order (digit runs padded by regular expressions) took minutes for a million units."""
    for _key, group in groupby(rows, key=itemgetter(0, 1)):
        for row in sorted(group, key=lambda row: natural_key(row[2])):
            yield row[3:]


_COMMA = " || ',' || "
# csv_cell's test in SQL: a formula's first character (FORMULA_PREFIXES), and the numbers it leaves alone.
_FORMULA = r"'^[=+@\t\r-]'"
_QUOTED = r"'[,\"\r\n]'"
_NUMBER = r"'^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$'"


def _csv_text(column: str) -> str:
    """`column` as `csv.writer` writes what `csv_cell` gives for it: an apostrophe before a formula that is
    no number, then in quotes (its quotes doubled) when it holds a comma, a quote or a line break."""
    cell = (
        f"CASE WHEN {column} ~ {_FORMULA} AND {column} !~ {_NUMBER} THEN '''' || {column} ELSE {column} END"
    )
    return (
        f"CASE WHEN {column} ~ {_QUOTED} THEN '\"' || replace({cell}, '\"', '\"\"') || '\"' ELSE {cell} END"
    )


def _log_cells(task: str) -> tuple[str, ...]:
    """The log's columns (LOG_COLUMNS) of `task` as SQL expressions of text; the task is a parameter."""
    _table, unit, _join, label = _LOG_SOURCES[task]
    return (
        "jd.name",
        "coalesce(u.username, '')",
        "jd.kind",
        "%s",
        "o.turn_id",
        unit,
        label,
        "coalesce(j.time_spent_ms::text, '')",
        _iso("j.created_at"),
        _iso("j.updated_at"),
    )


def _log_from(task: str) -> str:
    """The log's rows of `task` in the order of judge name, then turn (natural order). Its
    parameters: the turns' places, then the judge's pk twice (None: every judge)."""
    table, _unit, join, _label = _LOG_SOURCES[task]
    return (
        f"FROM {table} j JOIN {_IN_TURN_ORDER} ON o.pk = j.turn_id {join} "
        f"JOIN {Judge._meta.db_table} jd ON jd.id = j.judge_id "
        f"LEFT JOIN {User._meta.db_table} u ON u.id = jd.user_id "
        "WHERE (%s::bigint IS NULL OR j.judge_id = %s) "
        'ORDER BY jd.name COLLATE "C", jd.id, o.place'
    )


def _log_records(collection: Collection, judge: Judge | None, tasks: list[str]) -> Iterator[tuple[str, ...]]:
    """The log's rows as tuples of text in LOG_COLUMNS' order, streamed from the database."""
    turns = turn_places(collection=collection)
    judge_pk = None if judge is None else judge.pk
    for task in tasks:
        sql = (
            f"SELECT jd.id, o.place, {_LOG_SOURCES[task][1]}, {', '.join(_log_cells(task))} {_log_from(task)}"
        )
        yield from _units_in_natural_order(query_rows(sql, [task, *turns, judge_pk, judge_pk]))


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
    return Export(text_chunks(lines), ".qrels")
