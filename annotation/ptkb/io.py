"""PTKB qrels in and out.

PTKB qrels follow the TREC qrels shape with a PTKB statement in the document column and a binary label,
`turn 0 statement_id 0|1`, as the iKAT organisers distribute PTKB statement relevance. The text is parsed in
annotation/ptkb/formats.py; this module checks it against the collection and writes it, and writes the
database back out in the same shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from django.db import transaction

from annotation.formats.base import Problems
from annotation.labels.files import Download, Export, Upload
from annotation.models import Collection, Judge, PtkbJudgment, PtkbStatement, Turn
from annotation.ptkb.formats import ptkb_qrels_records
from annotation.ptkb.writer import PtkbRow, ptkb_judgments_upsert
from annotation.services import UNKNOWN_TURNS, ImportResult
from core.ordering import natural_key
from core.streaming import text_chunks


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


@transaction.atomic
def ptkb_qrels_import(
    *, path: str | Path, collection: Collection, judge: Judge, replace: bool = False
) -> ImportResult:
    """Load PTKB qrels as PTKB judgments of `judge`; all or nothing, and the same file twice changes nothing.

    Every turn must be in the collection and every statement in the PTKB of that turn's conversation;
    the file's syntax and these are checked in one pass, so every problem is reported at once.
    With `replace`, the judge's PTKB labels on this collection that the file lacks are deleted.
    """
    problems = Problems(str(path))
    turns = {
        turn_id: (pk, topic_id)
        for pk, turn_id, topic_id in Turn.objects.filter(collection=collection).values_list(
            "id", "turn_id", "topic_id"
        )
    }
    statements = {
        (topic_id, statement_id): pk
        for pk, topic_id, statement_id in PtkbStatement.objects.filter(
            topic__collection=collection
        ).values_list("id", "topic_id", "statement_id")
    }
    # The file is read a line at a time, and what is kept is bounded by the collection, not by the file:
    # the pairs of its turns and statements (by pk), and at most UNKNOWN_TURNS other pairs, beyond which a
    # pair labelled twice is told only as unknown.
    firsts: dict[tuple[int, int], int] = {}
    unknown: dict[tuple[str, str], int] = {}
    rows: list[PtkbRow] = []
    for record in ptkb_qrels_records(path, problems=problems):
        turn = turns.get(record.turn_id)
        statement = statements.get((turn[1], record.statement_id)) if turn is not None else None
        if turn is not None and statement is not None:
            first = firsts.setdefault((turn[0], statement), record.line)
        elif len(unknown) < UNKNOWN_TURNS:
            first = unknown.setdefault((record.turn_id, record.statement_id), record.line)
        else:
            first = unknown.get((record.turn_id, record.statement_id), record.line)
        if first != record.line:
            problems.add(
                record.line,
                f"{record.turn_id} {record.statement_id} is labelled twice (first on line {first})",
            )
        elif turn is None:
            problems.add(record.line, f"turn {record.turn_id} is not in collection {collection.name}")
        elif statement is None:
            problems.add(
                record.line,
                f"conversation of turn {record.turn_id} has no PTKB statement {record.statement_id}",
            )
        else:
            rows.append(PtkbRow(turn[0], statement, record.relevant))
    problems.raise_if_any()

    written = ptkb_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=rows,
        replace=replace,
    )
    result = ImportResult()
    result.created, result.updated, result.unchanged = written.created, written.updated, written.unchanged
    if replace:
        result.deleted = written.removed
    return result


# --- The console's upload and download ------------------------------------------------------------


def ptkb_qrels_upload(upload: Upload) -> ImportResult:
    return ptkb_qrels_import(
        path=upload.path,
        collection=upload.collection,
        judge=upload.judge(),
        replace=bool(upload.options.get("replace")),
    )


def ptkb_qrels_download(download: Download) -> Export:
    lines = ptkb_qrels_lines(collection=download.collection, judge=download.judge)
    return Export(text_chunks(lines), ".ptkb.qrels")
