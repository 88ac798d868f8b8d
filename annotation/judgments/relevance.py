"""The writers of relevance grades and PTKB statement labels: one submit each for assessors, API and
machine judges, and a bulk upsert each for qrels files."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections, models, router, transaction
from django.utils import timezone

from annotation.judgments.base import JudgmentRefused, Written
from annotation.models import (
    Collection,
    Judge,
    PtkbJudgment,
    PtkbStatement,
    RelevanceGrade,
    RelevanceJudgment,
    Turn,
)


def relevance_upsert_sql(*, table: str, rows: str) -> str:
    """The one statement that records or revises relevance grades, for the rows `rows` gives.

    `rows` is a VALUES list or a SELECT of (judge_id, turn_id, passage_id, grade, time_spent_ms,
    created_at, updated_at, grade_key); `table` the quoted table name. relevance_judgment_submit runs it,
    and the assessor page's grade statement (annotation/relevance/grade_sql.py) embeds it, so that what a
    revision keeps and adds up is written down once.

    A row whose stored `grade_key` equals the incoming one is a retry of the grade that wrote it (its
    client never got the answer): it is left as it is, time included, yet still returned, so the retry
    answers what the first attempt did without a second statement. A grade without a key keeps the
    stored key, so a late retry of that keyed grade still changes nothing.
    """
    replay = f"{table}.grade_key = excluded.grade_key"  # NULL, so false, when either has no key
    return (
        f"INSERT INTO {table} "
        "(judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at, grade_key) "
        f"{rows} "
        "ON CONFLICT (judge_id, turn_id, passage_id) DO UPDATE SET "
        f"grade = CASE WHEN {replay} THEN {table}.grade ELSE excluded.grade END, "
        f"time_spent_ms = CASE WHEN {replay} OR excluded.time_spent_ms IS NULL THEN {table}.time_spent_ms "
        f"ELSE COALESCE({table}.time_spent_ms, 0) + excluded.time_spent_ms END, "
        f"updated_at = CASE WHEN {replay} THEN {table}.updated_at ELSE excluded.updated_at END, "
        f"grade_key = COALESCE(excluded.grade_key, {table}.grade_key)"
    )


def relevance_judgment_submit(
    *,
    judge: Judge | int,
    turn: Turn | int,
    passage_id: str,
    grade: int,
    time_spent_ms: int | None = None,
    key: uuid.UUID | None = None,
) -> RelevanceJudgment:
    """Record or revise a judge's grade for (turn, passage); time spent adds up over revisions.

    `judge` and `turn` are the objects or, from a caller that has checked them already, their primary
    keys (the assessor API reads them with its ownership check and saves a query each). `key`, the
    client's idempotency key for this grade: given again (a retry), the stored row is answered unchanged.

    One `INSERT ... ON CONFLICT (judge, turn, passage_id) DO UPDATE` statement (PostgreSQL and SQLite
    speak it alike): it is atomic by itself, so it needs no transaction, and two submits of the same
    pair at the same instant end in one row instead of a lost update or a unique-constraint error.
    It replaces a locked read, a savepoint and an insert: this is the assessors' hot path, so the row
    comes back through a plain cursor rather than a raw queryset.
    """
    db = router.db_for_write(RelevanceJudgment)
    connection = connections[db]
    table = connection.ops.quote_name(RelevanceJudgment._meta.db_table)
    sql = relevance_upsert_sql(table=table, rows="VALUES (%s, %s, %s, %s, %s, %s, %s, %s)")
    now = timezone.now()
    turn_pk = turn.pk if isinstance(turn, Turn) else turn
    judge_pk = judge.pk if isinstance(judge, Judge) else judge
    key_value = _GRADE_KEY.get_db_prep_value(key, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"{sql} RETURNING id, grade, time_spent_ms, created_at, updated_at",
            (judge_pk, turn_pk, passage_id, grade, time_spent_ms, now, now, key_value),
        )
        pk, stored_grade, time_spent, created_at, updated_at = cursor.fetchone()
    if not isinstance(created_at, datetime):  # SQLite answers text
        convert = connection.ops.convert_datetimefield_value  # type: ignore[attr-defined]
        created_at, updated_at = (convert(value, None, connection) for value in (created_at, updated_at))
    judgment = RelevanceJudgment(
        id=pk,
        judge_id=judge_pk,
        turn_id=turn_pk,
        passage_id=passage_id,
        grade=stored_grade,
        time_spent_ms=time_spent,
        created_at=created_at,
        updated_at=updated_at,
        grade_key=key,
    )
    judgment._state.adding = False
    judgment._state.db = db
    if isinstance(judge, Judge):
        judgment.judge = judge
    if isinstance(turn, Turn):
        judgment.turn = turn
    return judgment


_GRADE_KEY = RelevanceJudgment._meta.get_field("grade_key")
assert isinstance(_GRADE_KEY, models.UUIDField)  # PostgreSQL's uuid, SQLite's 32 hex digits


@transaction.atomic
def ptkb_judgments_submit(
    *, judge: Judge, turn: Turn, answers: dict[int, bool], time_spent_ms: int | None = None
) -> list[PtkbJudgment]:
    """Record or revise a judge's relevant / not relevant answer for each PTKB statement of the turn.

    `answers` maps statement pks of the turn's conversation to the answer; time spent on the step is
    shared out evenly over its statements and adds up over revisions.
    """
    statements = {s.pk: s for s in PtkbStatement.objects.filter(topic_id=turn.topic_id, pk__in=list(answers))}
    unknown = set(answers) - set(statements)
    if unknown:
        raise JudgmentRefused(f"statements {sorted(unknown)} are not in the PTKB of turn {turn.turn_id}")
    share = None if time_spent_ms is None or not answers else time_spent_ms // len(answers)
    results: list[PtkbJudgment] = []
    for pk, relevant in answers.items():
        judgment, created = PtkbJudgment.objects.select_for_update().get_or_create(
            judge=judge,
            turn=turn,
            statement=statements[pk],
            defaults={"relevant": relevant, "time_spent_ms": share},
        )
        if not created:
            judgment.relevant = relevant
            if share is not None:
                judgment.time_spent_ms = (judgment.time_spent_ms or 0) + share
            judgment.save(update_fields=["relevant", "time_spent_ms", "updated_at"])
        results.append(judgment)
    return results


# --- Bulk relevance and PTKB labels (qrels files) ----------------------------------------------------


@dataclass(frozen=True)
class RelevanceRow:
    turn_id: int
    passage_id: str
    grade: int


@transaction.atomic
def relevance_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Sequence[RelevanceRow], replace: bool = False
) -> Written:
    """Make the judge's relevance grades on `collection` say what `rows` say (a qrels file).

    Idempotent: a row equal to what is stored changes nothing. With `replace`, the judge's grades on
    the collection that `rows` do not hold are removed, so its labels equal the file. New rows go in
    with one executemany per chunk: for files of tens of thousands of grades, bulk_create spends most
    of an import preparing values field by field, and these rows are already checked.
    """
    written = Written()
    for row in rows:
        if row.grade not in RelevanceGrade.values:
            raise JudgmentRefused(f"grade {row.grade} is outside the scale 0-4")
    stored = {
        (turn_id, passage_id): (pk, grade)
        for pk, turn_id, passage_id, grade in RelevanceJudgment.objects.filter(
            judge=judge, turn__collection=collection
        )
        .values_list("id", "turn_id", "passage_id", "grade")
        .iterator(chunk_size=5000)
    }
    db = router.db_for_write(RelevanceJudgment)
    now = connections[db].ops.adapt_datetimefield_value(timezone.now())
    created: list[tuple[Any, ...]] = []
    changed: list[RelevanceJudgment] = []
    seen: set[tuple[int, str]] = set()
    for row in rows:
        key = (row.turn_id, row.passage_id)
        seen.add(key)
        current = stored.get(key)
        if current is None:
            created.append((judge.pk, row.turn_id, row.passage_id, row.grade, now, now))
        elif current[1] != row.grade:
            changed.append(RelevanceJudgment(id=current[0], grade=row.grade))
        else:
            written.unchanged += 1
    if created:
        quote = connections[db].ops.quote_name
        columns = ", ".join(quote(_column(RelevanceJudgment, name)) for name in _RELEVANCE_INSERT_FIELDS)
        sql = (
            f"INSERT INTO {quote(RelevanceJudgment._meta.db_table)} ({columns}) "
            f"VALUES ({', '.join(['%s'] * len(_RELEVANCE_INSERT_FIELDS))})"
        )
        with connections[db].cursor() as cursor:
            for start in range(0, len(created), _BULK_CHUNK):
                cursor.executemany(sql, created[start : start + _BULK_CHUNK])
    RelevanceJudgment.objects.bulk_update(changed, ["grade"], batch_size=2000)
    written.created, written.updated = len(created), len(changed)
    if replace:
        stale = [pk for key, (pk, _grade) in stored.items() if key not in seen]
        for start in range(0, len(stale), 2000):
            RelevanceJudgment.objects.filter(id__in=stale[start : start + 2000]).delete()
        written.removed = len(stale)
    return written


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field) or not field.column:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field.column


_RELEVANCE_INSERT_FIELDS = ("judge", "turn", "passage_id", "grade", "created_at", "updated_at")
_BULK_CHUNK = 20_000


@dataclass(frozen=True)
class PtkbRow:
    turn_id: int
    statement_id: int
    relevant: bool


@transaction.atomic
def ptkb_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Sequence[PtkbRow], replace: bool = False
) -> Written:
    """Make the judge's PTKB labels on `collection` say what `rows` say (a PTKB qrels file); with
    `replace`, its labels the rows do not hold are removed. Idempotent, like the relevance upsert."""
    written = Written()
    stored = {
        (turn_id, statement_id): (pk, relevant)
        for pk, turn_id, statement_id, relevant in PtkbJudgment.objects.filter(
            judge=judge, turn__collection=collection
        ).values_list("id", "turn_id", "statement_id", "relevant")
    }
    created: list[PtkbJudgment] = []
    changed: list[PtkbJudgment] = []
    for row in rows:
        current = stored.get((row.turn_id, row.statement_id))
        if current is None:
            created.append(
                PtkbJudgment(
                    judge=judge, turn_id=row.turn_id, statement_id=row.statement_id, relevant=row.relevant
                )
            )
        elif current[1] != row.relevant:
            changed.append(PtkbJudgment(id=current[0], relevant=row.relevant))
        else:
            written.unchanged += 1
    PtkbJudgment.objects.bulk_create(created)
    PtkbJudgment.objects.bulk_update(changed, ["relevant"])
    written.created, written.updated = len(created), len(changed)
    if replace:
        kept = {(row.turn_id, row.statement_id) for row in rows}
        stale = [pk for key, (pk, _relevant) in stored.items() if key not in kept]
        PtkbJudgment.objects.filter(id__in=stale).delete()
        written.removed = len(stale)
    return written
