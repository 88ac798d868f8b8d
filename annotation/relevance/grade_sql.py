"""A grade with `next` from the assessor page, checked, written and answered in one PostgreSQL statement.

A grade from the assessor page (`work_grade(then_next=True)`, one request per judgment) reads the copy
with its ownership and membership checks and the graded pair's place in the pool and the unit, writes
the grade, and reads the unit's next passage with its text. `work_grade` does that on the ORM in three
queries; this module does it in one statement, prepared by psycopg once a connection has run it a few
times, because building and compiling those queries, and the round trips, cost more server CPU than
everything else the request does (README, "Running it at scale", has the measured difference). The
write is the one writer's statement (relevance_upsert_sql, as relevance_judgment_submit runs it) as a
data-modifying step, made only when the checks pass; the lease is renewed by `work_grade`, as on the
ORM path, and an assessor without a judge yet (their first grade) is written by
relevance_judgment_submit once `work_grade` has made the judge.

The statement sees the tables as they were when it started, so the graded pair is left out of the next
passage explicitly; the answer is the one the ORM path reads after writing. tests/annotation/
test_relevance_grade_sql.py runs one scripted sequence through both and compares every answer and the
stored rows.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, models

from annotation.judgments.relevance import relevance_upsert_sql
from annotation.models import (
    Assignment,
    Judge,
    Passage,
    Pool,
    PoolEntry,
    RelevanceJudgment,
    Turn,
    WorkSlot,
    WorkUnit,
)


@dataclass(frozen=True)
class GradeWritten:
    """The copy as the grade found it, and what it wrote; `next_*` are None when no passage is left.

    `judgment_pk` is None when nothing was written: the pair is not pooled for a turn of the unit
    (`pooled` false), or the assessor has no judge yet (`judge_pk` None).
    """

    leased_until: datetime | None
    lease_minutes: int
    turn_pks: list[int]
    label: str
    judge_pk: int | None
    pooled: bool
    judgment_pk: int | None
    time_spent_ms: int | None
    created_at: datetime | None
    next_turn_pk: int | None
    next_turn_id: str | None
    next_passage_id: str | None
    next_index: int | None
    next_title: str | None
    next_text: str | None


@functools.cache
def _statement() -> str:
    quote = connection.ops.quote_name
    tables: dict[str, type[models.Model]] = {
        "slot": WorkSlot,
        "unit": WorkUnit,
        "assignment": Assignment,
        "member": Assignment.assessors.through,
        "pool": Pool,
        "judge": Judge,
        "entry": PoolEntry,
        "turn": Turn,
        "judgment": RelevanceJudgment,
        "passage": Passage,
    }
    t = {name: quote(model._meta.db_table) for name, model in tables.items()}
    # The copy: held by the user, who is still a member of its assignment (as work_grade's ORM read).
    # The grade: written only when the pair is pooled for a turn of the copy's unit and the judge exists.
    # The next passage: the unit's first pooled passage in turn position then presentation order that the
    # judge has not graded, other than the pair being graded now (as _next_passage after the write).
    # Per unit turn its entries are walked along the pool_entry_in_order index, each probed in the
    # (judge, turn, passage) unique index, and the walk stops at the first one not graded, so a call
    # probes only what was graded before it. OFFSET 0 keeps that probe a probe: as an anti-join, a
    # generic plan prepared while the judgments table was small merges the whole table on every call.
    upsert = relevance_upsert_sql(
        table=t["judgment"],
        rows="SELECT c.judge_id, %(turn)s, %(passage)s, %(grade)s::smallint, %(time)s::integer, "
        "%(now)s::timestamptz, %(now)s::timestamptz FROM c WHERE c.pooled AND c.judge_id IS NOT NULL",
    )
    return f"""
WITH c AS (
    SELECT s.leased_until, a.lease_minutes, u.turn_pks, u.label, a.pool_id, p.collection_id, j.id AS judge_id,
           u.turn_pks @> to_jsonb(%(turn)s::bigint) AND EXISTS (
               SELECT 1 FROM {t["entry"]} pe
               WHERE pe.pool_id = a.pool_id AND pe.turn_id = %(turn)s AND pe.passage_id = %(passage)s
           ) AS pooled
    FROM {t["slot"]} s
    JOIN {t["unit"]} u ON u.id = s.unit_id
    JOIN {t["assignment"]} a ON a.id = u.assignment_id
    JOIN {t["pool"]} p ON p.id = a.pool_id
    LEFT JOIN {t["judge"]} j ON j.user_id = s.assessor_id
    WHERE s.id = %(slot)s AND s.assessor_id = %(user)s
      AND EXISTS (
          SELECT 1 FROM {t["member"]} m WHERE m.assignment_id = s.assignment_id AND m.user_id = %(user)s
      )
), w AS (
    {upsert}
    RETURNING id, time_spent_ms, created_at
)
SELECT c.leased_until, c.lease_minutes, c.turn_pks, c.label, c.judge_id, c.pooled,
       w.id, w.time_spent_ms, w.created_at,
       n.turn_id, n.turn_name, n.passage_id, n."order", ps.title, ps.text
FROM c
LEFT JOIN w ON TRUE
LEFT JOIN LATERAL (
    SELECT first.turn_id, tt.turn_id AS turn_name, first.passage_id, first."order"
    FROM jsonb_array_elements_text(c.turn_pks) ut
    JOIN {t["turn"]} tt ON tt.id = ut.value::bigint
    CROSS JOIN LATERAL (
        SELECT e.turn_id, e.passage_id, e."order", e.id
        FROM {t["entry"]} e
        WHERE e.pool_id = c.pool_id AND e.turn_id = tt.id
          AND NOT (e.turn_id = %(turn)s AND e.passage_id = %(passage)s)
          AND NOT EXISTS (
              SELECT 1 FROM {t["judgment"]} r
              WHERE r.judge_id = c.judge_id AND r.turn_id = e.turn_id AND r.passage_id = e.passage_id
              OFFSET 0
          )
        ORDER BY e."order", e.id
        LIMIT 1
    ) first
    ORDER BY tt.position, first."order", first.id
    LIMIT 1
) n ON c.pooled
LEFT JOIN {t["passage"]} ps ON ps.collection_id = c.collection_id AND ps.passage_id = n.passage_id
"""


def grade_write(
    *,
    user_pk: int,
    slot_pk: int,
    turn_pk: int,
    passage_id: str,
    grade: int,
    time_spent_ms: int | None,
    now: datetime,
) -> GradeWritten | None:
    """Grade (turn_pk, passage_id) in the copy `slot_pk` as its holder `user_pk`; None if not theirs."""
    params: dict[str, int | str | datetime | None] = {
        "slot": slot_pk,
        "user": user_pk,
        "turn": turn_pk,
        "passage": passage_id,
        "grade": grade,
        "time": time_spent_ms,
        "now": now,
    }
    with connection.cursor() as cursor:
        cursor.execute(_statement(), params)
        row = cursor.fetchone()
    if row is None:
        return None
    return GradeWritten(*row)
