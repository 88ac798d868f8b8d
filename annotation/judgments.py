"""The one writer of each kind of judgment row.

Pages, the JSON API, imports, crowd aggregation and machine judges all record a label through the
function here for its table, so that the rules of a label (its scale, how time spent adds up over
revisions, what a revision replaces) live in one place.
"""

from __future__ import annotations

from django.db import connections, router
from django.utils import timezone

from annotation.models import Judge, RelevanceJudgment, Turn


def relevance_judgment_submit(
    *, judge: Judge, turn: Turn | int, passage_id: str, grade: int, time_spent_ms: int | None = None
) -> RelevanceJudgment:
    """Record or revise a judge's grade for (turn, passage); time spent adds up over revisions.

    `turn` is the Turn or, from a caller that has checked it already, its primary key.

    One `INSERT ... ON CONFLICT (judge, turn, passage_id) DO UPDATE` statement (PostgreSQL and SQLite
    speak it alike): it is atomic by itself, so it needs no transaction, and two submits of the same
    pair at the same instant end in one row instead of a lost update or a unique-constraint error.
    It replaces a locked read, a savepoint and an insert: this is the assessors' hot path.
    """
    db = router.db_for_write(RelevanceJudgment)
    quote = connections[db].ops.quote_name
    table = quote(RelevanceJudgment._meta.db_table)
    now = timezone.now()
    sql = (
        f"INSERT INTO {table} (judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (judge_id, turn_id, passage_id) DO UPDATE SET grade = excluded.grade, "
        f"time_spent_ms = CASE WHEN excluded.time_spent_ms IS NULL THEN {table}.time_spent_ms "
        f"ELSE COALESCE({table}.time_spent_ms, 0) + excluded.time_spent_ms END, "
        "updated_at = excluded.updated_at "
        "RETURNING id, judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at"
    )
    turn_pk = turn.pk if isinstance(turn, Turn) else turn
    params = (judge.pk, turn_pk, passage_id, grade, time_spent_ms, now, now)
    (judgment,) = RelevanceJudgment.objects.raw(sql, params, using=db)
    judgment.judge = judge
    if isinstance(turn, Turn):
        judgment.turn = turn
    return judgment
