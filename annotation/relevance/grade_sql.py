"""The read a grade with `next` makes, as one hand-written PostgreSQL statement.

A grade from the assessor page (`work_grade(then_next=True)`, one request per judgment) reads the copy
with its ownership and membership checks, the graded pair's place in the pool, the assessor's judge and
the unit's next passage with its text. `work_grade` reads that on the ORM in two queries; this module
reads it in one statement, prepared by psycopg once a connection has run it a few times, because
building and compiling those ORM queries costs more server CPU than everything else the request does
(README, "Running it at scale", has the measured difference). It only reads: the grade is written by
`relevance_judgment_submit`, the lease renewed by `work_grade`, each as on the ORM path.

The next passage is found before the grade is written, so the graded pair is left out explicitly; the
answer is the one the ORM path reads after writing it. tests/annotation/test_relevance_grade_sql.py runs
one scripted sequence through both and compares every answer and the stored rows.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, models

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
class GradeRead:
    """What a grade needs to know before it is written; `next_*` are None when no passage is left."""

    leased_until: datetime | None
    lease_minutes: int
    turn_pks: list[int]
    label: str
    pool_pk: int
    collection_pk: int
    judge_pk: int | None
    pooled: bool
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
    # The next passage: the unit's first pooled passage in turn position then presentation order that the
    # judge has not graded, other than the pair being graded now (as _next_passage after the write).
    # Per unit turn its entries are walked along the pool_entry_in_order index, each probed in the
    # (judge, turn, passage) unique index, and the walk stops at the first one not graded, so a call
    # probes only what was graded before it. OFFSET 0 keeps that probe a probe: as an anti-join, a
    # generic plan prepared while the judgments table was small merges the whole table on every call.
    return f"""
SELECT s.leased_until, a.lease_minutes, u.turn_pks, u.label, a.pool_id, p.collection_id, j.id,
       EXISTS (
           SELECT 1 FROM {t["entry"]} pe
           WHERE pe.pool_id = a.pool_id AND pe.turn_id = %(turn)s AND pe.passage_id = %(passage)s
       ),
       n.turn_id, n.turn_name, n.passage_id, n."order", ps.title, ps.text
FROM {t["slot"]} s
JOIN {t["unit"]} u ON u.id = s.unit_id
JOIN {t["assignment"]} a ON a.id = u.assignment_id
JOIN {t["pool"]} p ON p.id = a.pool_id
LEFT JOIN {t["judge"]} j ON j.user_id = s.assessor_id
LEFT JOIN LATERAL (
    SELECT first.turn_id, tt.turn_id AS turn_name, first.passage_id, first."order"
    FROM jsonb_array_elements_text(u.turn_pks) ut
    JOIN {t["turn"]} tt ON tt.id = ut.value::bigint
    CROSS JOIN LATERAL (
        SELECT e.turn_id, e.passage_id, e."order", e.id
        FROM {t["entry"]} e
        WHERE e.pool_id = a.pool_id AND e.turn_id = tt.id
          AND NOT (e.turn_id = %(turn)s AND e.passage_id = %(passage)s)
          AND NOT EXISTS (
              SELECT 1 FROM {t["judgment"]} r
              WHERE r.judge_id = j.id AND r.turn_id = e.turn_id AND r.passage_id = e.passage_id
              OFFSET 0
          )
        ORDER BY e."order", e.id
        LIMIT 1
    ) first
    ORDER BY tt.position, first."order", first.id
    LIMIT 1
) n ON TRUE
LEFT JOIN {t["passage"]} ps ON ps.collection_id = p.collection_id AND ps.passage_id = n.passage_id
WHERE s.id = %(slot)s AND s.assessor_id = %(user)s
  AND EXISTS (SELECT 1 FROM {t["member"]} m WHERE m.assignment_id = s.assignment_id AND m.user_id = %(user)s)
"""


def grade_read(*, user_pk: int, slot_pk: int, turn_pk: int, passage_id: str) -> GradeRead | None:
    """The copy `slot_pk` as its holder `user_pk` grades (turn_pk, passage_id) in it; None if not theirs."""
    params: dict[str, int | str] = {"slot": slot_pk, "user": user_pk, "turn": turn_pk, "passage": passage_id}
    with connection.cursor() as cursor:
        cursor.execute(_statement(), params)
        row = cursor.fetchone()
    if row is None:
        return None
    return GradeRead(*row)
