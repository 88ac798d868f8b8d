"""The writer of relevance grades: one submit for assessors, API and machine judges, and a bulk upsert for
qrels files."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connections, models, router, transaction
from django.utils import timezone

from annotation.labels.writer import TIME_SPENT_MAX_MS, JudgmentRefused, Written
from annotation.models import (
    Collection,
    Judge,
    Passage,
    RelevanceGrade,
    RelevanceJudgment,
    Turn,
)
from core.staging import Stage, staged


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
        f"ELSE LEAST(COALESCE({table}.time_spent_ms, 0)::bigint + excluded.time_spent_ms, {TIME_SPENT_MAX_MS}) END, "
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

    One `INSERT ... ON CONFLICT (judge, turn, passage_id) DO UPDATE` statement: it is atomic by itself, so it needs no transaction, and two submits of the same
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
assert isinstance(_GRADE_KEY, models.UUIDField)


# --- Bulk relevance labels (qrels files) ----------------------------------------------------


@dataclass(frozen=True)
class RelevanceRow:
    turn_id: int
    passage_id: str
    grade: int


def relevance_judgments_submit(*, judge: Judge, rows: Sequence[RelevanceRow]) -> int:
    """Record or revise many of a judge's grades in one statement, each as `relevance_judgment_submit`
    would (no time spent, no idempotency key): a machine judge's labels a batch at a time. Returns how
    many rows it wrote; a pair given twice keeps its last grade."""
    last = {(row.turn_id, row.passage_id): row.grade for row in rows}
    for grade in last.values():
        if grade not in RelevanceGrade.values:
            raise JudgmentRefused(f"grade {grade} is outside the scale 0-4")
    if not last:
        return 0
    connection = connections[router.db_for_write(RelevanceJudgment)]
    # An array per column: one statement of one shape whatever the number of rows.
    sql = relevance_upsert_sql(
        table=_table(RelevanceJudgment),
        rows=(
            "SELECT %s, t, p, g, NULL::integer, %s, %s, NULL::uuid "
            "FROM unnest(%s::bigint[], %s::text[], %s::smallint[]) AS u(t, p, g)"
        ),
    )
    now = timezone.now()
    pairs = list(last)
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                judge.pk,
                now,
                now,
                [t for t, _ in pairs],
                [p for _, p in pairs],
                [last[pair] for pair in pairs],
            ],
        )
        return cursor.rowcount


class RelevanceStage(Stage):
    """A relevance file's rows (line, turn pk, passage id, grade) staged (core/staging.py), so that a file of
    millions of grades is checked and written in the database with the same memory whatever its size.

    Made by `relevance_stage`, filled by `fill`, then `seal`ed (indexed) before it is read.
    """

    def __init__(self, db: str) -> None:
        super().__init__(
            db,
            "relevance_stage",
            [
                ("turn_id", "bigint NOT NULL"),
                ("passage_id", "varchar(255) NOT NULL"),
                ("grade", "smallint NOT NULL"),
            ],
            key=("turn_id", "passage_id"),
        )

    def without_passage(self, *, collection: Collection, limit: int) -> tuple[int, list[tuple[int, str]]]:
        """How many rows name a passage the collection lacks, and the first `limit` (line, passage id)."""
        return self.sampled(
            f"NOT EXISTS (SELECT 1 FROM {_table(Passage)} p "
            "WHERE p.collection_id = %s AND p.passage_id = s.passage_id)",
            columns="s.line, s.passage_id",
            params=[collection.pk],
            limit=limit,
        )


@contextmanager
def relevance_stage() -> Iterator[RelevanceStage]:
    """A fresh stage for one file, inside the caller's transaction (its rollback drops the table too)."""
    with staged(RelevanceStage(router.db_for_write(RelevanceJudgment))) as stage:
        yield stage


@transaction.atomic
def relevance_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Sequence[RelevanceRow], replace: bool = False
) -> Written:
    """Make the judge's relevance grades on `collection` say what `rows` say (a qrels file): the rows
    go through a stage (`relevance_judgments_upsert_stage`); a file too large to hold as rows streams
    into the stage itself (annotation/relevance/io.py)."""
    for row in rows:
        if row.grade not in RelevanceGrade.values:
            raise JudgmentRefused(f"grade {row.grade} is outside the scale 0-4")
    with relevance_stage() as stage:
        stage.fill((line, r.turn_id, r.passage_id, r.grade) for line, r in enumerate(rows))
        stage.seal()
        return relevance_judgments_upsert_stage(
            judge=judge, collection=collection, stage=stage, replace=replace
        )


@transaction.atomic
def relevance_judgments_upsert_stage(
    *, judge: Judge, collection: Collection, stage: RelevanceStage, replace: bool = False
) -> Written:
    """Make the judge's relevance grades on `collection` say what the sealed `stage` says, its pairs
    unique and its grades on the scale (the caller checked them).

    Idempotent: a row equal to what is stored changes nothing (the stage's `restate`, core/staging.py).
    With `replace`, the judge's grades on the collection that the stage does not hold are removed, so its
    labels equal the file. Each step is one statement over the whole stage (counts, update, insert,
    delete), so neither the file nor the judge's stored grades pass through Python.
    """
    table = _table(RelevanceJudgment)
    done = stage.restate(table, owner=("judge_id", judge.pk), unit=("turn_id", "passage_id"), label="grade")
    written = Written(created=done.created, updated=done.updated, unchanged=done.unchanged)
    if replace:
        with stage.connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {table} WHERE judge_id = %s AND turn_id IN "
                f"(SELECT id FROM {_table(Turn)} WHERE collection_id = %s) AND NOT EXISTS (SELECT 1 FROM "
                f"{stage.table} s WHERE s.turn_id = {table}.turn_id AND s.passage_id = {table}.passage_id)",
                [judge.pk, collection.pk],
            )
            written.removed = cursor.rowcount
    return written


def _table(model: type[models.Model]) -> str:
    return connections[router.db_for_write(model)].ops.quote_name(model._meta.db_table)
