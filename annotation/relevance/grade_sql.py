"""The relevance work rules as two prepared statements: a grade, and the next passage.

Every grade an assessor gives (the page's form, the JSON `grade` with or without `next`) is checked,
written and answered by `grade_write`, one statement; every read of "the next passage of this copy" (the
JSON `next`, the page closing a copy, the grade's `next`) by `next_read`, one statement. work.py calls
them and nothing else: they are the only writer and reader of that path, the rules' one form. They are
statements for speed: an ORM form of the same rules cost four queries and about 20 times the time per
grade with next (docs/performance.md), while a statement psycopg has prepared (settings: server-side
binding) costs PostgreSQL neither a parse nor a plan. tests/annotation/relevance/test_relevance_grade_sql.py runs
scripted campaigns (several assessors, a PTKB step, a lease taken over) and checks every answer and every
stored row.

The rules:
- the copy: held by the user, who is still a member of its assignment (and, for a user the view took
  from memory, whose key or session still holds: core.remembered);
- the grade: written only when the pair is pooled for a turn of the copy's unit or is one of the unit's
  gold pairs (annotation.relevance.quality; such a grade is marked in gold_grade), by the one writer's
  statement (relevance_upsert_sql, which relevance_judgment_submit runs too), as a
  data-modifying step that runs only when the checks pass; the caller makes the assessor's judge first;
- the next passage: the unit's first pooled passage or gold pair, in turn position then presentation
  order (gold pairs at their planted places), that the user's judge has not graded. A grade's statement sees the tables as they were when it started, so it
  leaves the pair it grades out explicitly; the answer is the one a read after the write gives.
"""

from __future__ import annotations

import functools
import uuid
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
from annotation.relevance.quality.models import GoldGrade, GoldPair
from annotation.relevance.writer import relevance_upsert_sql
from core.remembered import Remembered, remembered_sql


@dataclass(frozen=True)
class NextPassage:
    """A pooled passage to grade in a copy: its turn, its place in the turn (from 0), and its text."""

    slot_pk: int
    unit: str
    turn_pk: int
    turn_id: str
    passage_id: str
    index: int
    title: str
    text: str  # empty when the collection lacks it


@dataclass(frozen=True)
class GradeWritten:
    """The copy as the grade found it, and what it wrote; `judgment_pk` None when nothing was.

    Nothing is written when the pair is not pooled for a turn of the unit (`pooled` false) or the
    assessor has no judge yet (`judge_pk` None). `next` is read only when asked for.
    """

    leased_until: datetime | None
    lease_minutes: int
    label: str
    judge_pk: int | None
    pooled: bool
    judgment_pk: int | None
    grade: int | None  # as stored: a retry's own is ignored
    time_spent_ms: int | None
    created_at: datetime | None
    updated_at: datetime | None
    next: NextPassage | None


@dataclass(frozen=True)
class HeldCopy:
    """The copy `next_read` found the user holding, and its next passage (None: none is left)."""

    slot_pk: int
    leased_until: datetime | None
    completed: bool
    lease_minutes: int
    label: str
    next: NextPassage | None


def _tables() -> dict[str, str]:
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
        "gold": GoldPair,
        "gold_grade": GoldGrade,
    }
    return {name: quote(model._meta.db_table) for name, model in tables.items()}


def _copy(t: dict[str, str], where: str, *, held: bool, also: str = "", join: str = "") -> str:
    """The copy and what its rules need, as CTE `c`; `held`: only if the user holds it and is still a
    member of its assignment."""
    # A user taken from memory (core.remembered) is checked here too: nothing is read or written unless
    # their key, or their session's password, still holds.
    check = remembered_sql(user="%(user)s", token="%(token)s", password="%(password)s")
    holder = (
        f"""s.assessor_id = %(user)s AND EXISTS (
          SELECT 1 FROM {t["member"]} m WHERE m.assignment_id = s.assignment_id AND m.user_id = %(user)s
      ) AND {check} AND """
        if held
        else ""
    )
    return f"""
    SELECT s.id AS slot_id, s.unit_id, s.leased_until, s.completed_at, a.lease_minutes, u.turn_pks, u.label,
           a.pool_id, p.collection_id, j.id AS judge_id{also}
    FROM {t["slot"]} s
    JOIN {t["unit"]} u ON u.id = s.unit_id
    JOIN {t["assignment"]} a ON a.id = u.assignment_id
    JOIN {t["pool"]} p ON p.id = a.pool_id
    LEFT JOIN {t["judge"]} j ON j.user_id = %(user)s{join}
    WHERE {holder}{where}"""


def _next_passage(t: dict[str, str], *, leave_out_graded: bool) -> str:
    """The next passage of copy `c` with its text, as a LATERAL subquery `n` and its passage `ps`.

    Per unit turn its entries are walked along the pool_entry_in_order index up to the first one the
    judge has not graded, against the judge's grades of that turn, read once (a range of the (judge,
    turn, passage) unique index) as a hashed set. Read once per turn rather than probed once per entry:
    a generic plan prepared while the judgments table was small scans the table instead of the index
    until autovacuum's next ANALYZE replans it, and once per entry that scan made every call cost as
    much as the table is large.

    The unit's gold pairs of the turn are walked the same way (gold_pair_in_order) and take their
    places among the entries: a gold pair of `order` k comes just before the entry of order k. The
    index is the place in that merged order, so gold and pooled passages read alike to the assessor.

    Each unit turn is looked up by its key, one probe per element of `turn_pks` (the LIMIT keeps the
    planner from turning the lookup back into a join): joined as a set, the planner's guess of a
    hundred elements made it hash the whole turns table on every call, a cost that grew with the
    collection.
    """
    graded_now = "AND NOT (e.turn_id = %(turn)s AND e.passage_id = %(passage)s)" if leave_out_graded else ""
    gold_now = "AND NOT (g.turn_id = %(turn)s AND g.passage_id = %(passage)s)" if leave_out_graded else ""
    graded = f"SELECT r.passage_id FROM {t['judgment']} r WHERE r.judge_id = c.judge_id AND r.turn_id = tt.id"
    return f"""LATERAL (
    SELECT first.turn_id, tt.turn_id AS turn_name, first.passage_id,
           first."order" + (
               SELECT count(*) FROM {t["gold"]} gb
               WHERE gb.unit_id = c.unit_id AND gb.turn_id = tt.id
                 AND (gb."order" < first."order"
                      OR (gb."order" = first."order" AND (first.pooled OR gb.id < first.id)))
           ) AS "order"
    FROM jsonb_array_elements_text(c.turn_pks) ut
    CROSS JOIN LATERAL (
        SELECT ot.id, ot.turn_id, ot.position FROM {t["turn"]} ot WHERE ot.id = ut.value::bigint LIMIT 1
    ) tt
    CROSS JOIN LATERAL (
        SELECT * FROM ((
            SELECT e.turn_id, e.passage_id, e."order", e.id, TRUE AS pooled
            FROM {t["entry"]} e
            WHERE e.pool_id = c.pool_id AND e.turn_id = tt.id {graded_now}
              AND e.passage_id NOT IN ({graded})
            ORDER BY e."order", e.id
            LIMIT 1
        ) UNION ALL (
            SELECT g.turn_id, g.passage_id, g."order", g.id, FALSE AS pooled
            FROM {t["gold"]} g
            WHERE g.unit_id = c.unit_id AND g.turn_id = tt.id {gold_now}
              AND g.passage_id NOT IN ({graded})
            ORDER BY g."order", g.id
            LIMIT 1
        )) both_kinds
        ORDER BY both_kinds."order", both_kinds.pooled, both_kinds.id
        LIMIT 1
    ) first
    ORDER BY tt.position, first."order", first.pooled, first.id
    LIMIT 1
) n"""


_NEXT_COLUMNS = 'n.turn_id, n.turn_name, n.passage_id, n."order", ps.title, ps.text'


def _passage_join(t: dict[str, str]) -> str:
    return (
        f"LEFT JOIN {t['passage']} ps ON ps.collection_id = c.collection_id AND ps.passage_id = n.passage_id"
    )


@functools.cache
def _grade_statement(with_next: bool) -> str:
    t = _tables()
    upsert = relevance_upsert_sql(
        table=t["judgment"],
        rows="SELECT c.judge_id, %(turn)s, %(passage)s, %(grade)s::smallint, %(time)s::integer, "
        "%(now)s::timestamptz, %(now)s::timestamptz, %(key)s::uuid FROM c WHERE c.pooled AND c.judge_id IS NOT NULL",
    )
    # The pair must be pooled for a turn of this copy's unit (a pool's other turns may be other units'),
    # or be one of the unit's gold pairs; a grade of a gold pair is marked as such (gold_grade).
    pooled = f""",
           u.turn_pks @> to_jsonb(%(turn)s::bigint) AND (EXISTS (
               SELECT 1 FROM {t["entry"]} pe
               WHERE pe.pool_id = a.pool_id AND pe.turn_id = %(turn)s AND pe.passage_id = %(passage)s
           ) OR gp.id IS NOT NULL) AS pooled, gp.id AS gold_id"""
    gold_join = f"""
    LEFT JOIN {t["gold"]} gp ON gp.unit_id = s.unit_id AND gp.turn_id = %(turn)s AND gp.passage_id = %(passage)s"""
    copy = _copy(t, "s.id = %(slot)s", held=True, also=pooled, join=gold_join)
    columns = _NEXT_COLUMNS if with_next else "NULL, NULL, NULL, NULL, NULL, NULL"
    joins = (
        f"LEFT JOIN {_next_passage(t, leave_out_graded=True)} ON c.pooled\n{_passage_join(t)}"
        if with_next
        else ""
    )
    return f"""
WITH c AS ({copy}
), w AS (
    {upsert}
    RETURNING id, grade, time_spent_ms, created_at, updated_at
), m AS (
    INSERT INTO {t["gold_grade"]} (judgment_id, pair_id)
    SELECT w.id, c.gold_id FROM w, c WHERE c.gold_id IS NOT NULL
    ON CONFLICT (judgment_id) DO NOTHING
)
SELECT c.leased_until, c.lease_minutes, c.label, c.judge_id, c.pooled, w.id, w.grade, w.time_spent_ms,
       w.created_at, w.updated_at, {columns}
FROM c
LEFT JOIN w ON TRUE
{joins}
"""


@functools.cache
def _next_statement(which: str) -> str:
    t = _tables()
    if which == "held":  # the open copy they hold, first in the assignment's order
        copy = _copy(t, "s.assignment_id = %(assignment)s AND s.completed_at IS NULL", held=True)
        copy += "\n    ORDER BY s.position LIMIT 1"
    elif which == "held slot":  # assignment 0: in any of the user's assignments
        copy = _copy(
            t, "s.id = %(slot)s AND (%(assignment)s = 0 OR s.assignment_id = %(assignment)s)", held=True
        )
    else:  # the copy as its holder's caller has read it
        copy = _copy(t, "s.id = %(slot)s", held=False)
    return f"""
WITH c AS ({copy}
)
SELECT c.slot_id, c.leased_until, c.completed_at IS NOT NULL, c.lease_minutes, c.label, {_NEXT_COLUMNS}
FROM c
LEFT JOIN {_next_passage(t, leave_out_graded=False)} ON c.completed_at IS NULL
{_passage_join(t)}
"""


def _next_row(slot_pk: int, label: str, values: tuple) -> NextPassage | None:
    turn_pk, turn_id, passage_id, index, title, text = values
    if turn_pk is None:
        return None
    return NextPassage(slot_pk, label, turn_pk, turn_id, passage_id, index, title or "", text or "")


def grade_write(
    *,
    user_pk: int,
    slot_pk: int,
    turn_pk: int,
    passage_id: str,
    grade: int,
    time_spent_ms: int | None,
    key: uuid.UUID | None,
    now: datetime,
    with_next: bool,
    check: Remembered | None = None,
) -> GradeWritten | None:
    """Grade (turn_pk, passage_id) in the copy `slot_pk` as its holder `user_pk`; None if not theirs.

    `key`: the grade's idempotency key; a retry with the key the row holds writes nothing and answers
    the row as the first attempt left it (relevance_upsert_sql). `check`: a user taken from memory, checked by
    the statement (core.remembered.RememberRefused when it no longer holds)."""
    params: dict[str, int | str | datetime | uuid.UUID | None] = {
        "slot": slot_pk,
        "user": user_pk,
        **_checked(check),
        "turn": turn_pk,
        "passage": passage_id,
        "grade": grade,
        "time": time_spent_ms,
        "key": key,
        "now": now,
    }
    with connection.cursor() as cursor:
        cursor.execute(_grade_statement(with_next), params)
        row = cursor.fetchone()
    if row is None:
        if check is not None:
            check.recheck()
        return None
    leased_until, lease_minutes, label, judge_pk, pooled, judgment_pk = row[:6]
    grade_stored, time_stored, created_at, updated_at = row[6:10]
    return GradeWritten(
        leased_until,
        lease_minutes,
        label,
        judge_pk,
        pooled,
        judgment_pk,
        grade_stored,
        time_stored,
        created_at,
        updated_at,
        next=_next_row(slot_pk, label, row[10:]),
    )


def next_read(
    *, user_pk: int, assignment_pk: int, slot_pk: int | None, check: Remembered | None = None
) -> HeldCopy | None:
    """The copy the user holds (`slot_pk`, or their first open one in the assignment) and its next
    passage; None when they hold no such copy (or are no longer a member). `check` as for grade_write:
    None is answered only once the user is known good."""
    params: dict[str, int | str | None] = {"user": user_pk, "assignment": assignment_pk, **_checked(check)}
    if slot_pk is not None:
        params["slot"] = slot_pk
    held = _read(_next_statement("held slot" if slot_pk is not None else "held"), params)
    if held is None and check is not None:
        check.recheck()
    return held


def _checked(check: Remembered | None) -> dict[str, str | None]:
    return {"token": check.token, "password": check.password} if check else {"token": None, "password": None}


def next_of_copy(*, user_pk: int, slot_pk: int, label: str) -> NextPassage | None:
    """The next passage for the user in the copy `slot_pk`, which the caller has read as theirs."""
    held = _read(_next_statement("slot"), {"user": user_pk, "slot": slot_pk})
    return held.next if held is not None else None


def _read(statement: str, params: dict[str, int | str | None]) -> HeldCopy | None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        return None
    slot_pk, leased_until, completed, lease_minutes, label = row[:5]
    return HeldCopy(
        slot_pk, leased_until, completed, lease_minutes, label, next=_next_row(slot_pk, label, row[5:])
    )
