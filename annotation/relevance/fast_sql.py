"""The assessor JSON loop on PostgreSQL as single prepared statements (see the comment below)."""

from __future__ import annotations

import functools
import re
import weakref
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError
from django.utils import timezone
from psycopg.types.numeric import Int2, Int4, Int8

from annotation import fastpool
from annotation.models import (
    Assignment,
    Judge,
    Passage,
    Pool,
    PoolEntry,
    PtkbStatement,
    RelevanceJudgment,
    Turn,
    WorkSlot,
    WorkUnit,
)

# --- Scripted assessors on PostgreSQL: one statement per request -----------------------------------
#
# The JSON loop (next + grade) is the campaign's hot path. On PostgreSQL each request is one
# parametrised statement that authenticates the token (an active user with a judge), checks ownership
# and does the work; when the held unit is finished (or none is held), one more statement closes it and
# claims the next free copy (`FOR UPDATE SKIP LOCKED`). Any other outcome (no such token, no judge yet,
# not a member, a PTKB step left, no free copy, not your unit, not pooled) returns None and the caller
# takes the ORM path, which decides the answer (401 / 404 / 400 / 409 / 204) exactly as before.


@dataclass(frozen=True)
class FastStep:
    """What the next-passage statement returns: the held copy and its first ungraded passage."""

    slot: int
    unit: str
    turn_id: str
    turn_pk: int
    passage_id: str
    text: str


def _tables() -> dict[str, str]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.authtoken.models import Token

    quote = connection.ops.quote_name
    models = {
        "token": Token,
        "user": get_user_model(),
        "judge": Judge,
        "slot": WorkSlot,
        "unit": WorkUnit,
        "assignment": Assignment,
        "pool": Pool,
        "entry": PoolEntry,
        "turn": Turn,
        "passage": Passage,
        "judgment": RelevanceJudgment,
        "member": Assignment.assessors.through,
        "statement": PtkbStatement,
    }
    return {name: quote(model._meta.db_table) for name, model in models.items()}


# An active user's token and their judge: a token without a judge yet goes the ORM way, which makes it.
_TOKEN_CTE = """
tok AS (
    SELECT t.user_id, j.id AS judge_id
    FROM {token} t
    JOIN {user} u ON u.id = t.user_id AND u.is_active
    JOIN {judge} j ON j.user_id = t.user_id
    WHERE t."key" = $1::text
)"""

# open_slots: the copies the user holds open (a handful, found by the assessor index); materialised, and
# their units looked up by key one by one (OFFSET 0 keeps the lateral lookup), so that the plan starts
# from them instead of walking the assignment's units in position order. The unit's turns and their
# pooled entries are likewise looked up by key per unit turn (a generic plan would otherwise walk
# every turn of the collection).
# held: the open copy the user holds in the assignment (lowest unit position), as held_slot finds it.
# renewed: its lease renewed when less than half is left, as _lease_renew does (a data-modifying CTE
# runs whether or not the query reads it). Then the unit's first pooled passage this judge has not
# graded, in turn position then presentation order, as next_passage_entry finds it: per turn, its
# entries are walked in order along the pool_entry_in_order index and the walk stops at the first one
# not graded, so a call probes only the passages graded before it instead of sorting the whole turn.
# Its text is looked up for that one row, in the turn's collection (a join before the LIMIT would hash
# the whole collection). OFFSET 0 keeps the graded check a probe of the (judge, turn, passage) index
# per pooled passage: as an anti-join, the plan prepared while the judgments table was small scans
# and sorts the whole table on every call.
_NEXT_SQL = (
    "WITH"
    + _TOKEN_CTE
    + """,
open_slots AS MATERIALIZED (
    SELECT s.id, s.unit_id, s.leased_until, tok.judge_id
    FROM tok
    JOIN {slot} s ON s.assessor_id = tok.user_id AND s.completed_at IS NULL
),
held AS (
    SELECT s.id, s.leased_until, u.label, u.turn_pks, a.pool_id, a.lease_minutes, s.judge_id
    FROM open_slots s
    CROSS JOIN LATERAL (
        SELECT uu.id, uu.label, uu.turn_pks, uu.position, uu.assignment_id FROM {unit} uu
        WHERE uu.id = s.unit_id
        OFFSET 0
    ) u
    JOIN {assignment} a ON a.id = u.assignment_id AND a.id = $2::bigint
    ORDER BY u.position
    LIMIT 1
),
renewed AS (
    UPDATE {slot} s SET leased_until = $3::timestamptz + make_interval(mins => held.lease_minutes)
    FROM held
    WHERE s.id = held.id AND (
        held.leased_until IS NULL
        OR held.leased_until - $3::timestamptz < make_interval(mins => held.lease_minutes) / 2
    )
    RETURNING s.id
)
SELECT n.slot, n.label, n.turn_id, n.turn_pk, n.passage_id,
       (SELECT ps.text FROM {passage} ps
        WHERE ps.collection_id = n.collection_id AND ps.passage_id = n.passage_id)
FROM (
    SELECT held.id AS slot, held.label, t.collection_id, t.turn_id, e.turn_id AS turn_pk, e.passage_id
    FROM held
    CROSS JOIN LATERAL jsonb_array_elements_text(held.turn_pks) AS unit_turn(pk)
    CROSS JOIN LATERAL (
        SELECT tt.id, tt.turn_id, tt.position, tt.collection_id FROM {turn} tt
        WHERE tt.id = unit_turn.pk::bigint
        OFFSET 0
    ) t
    CROSS JOIN LATERAL (
        SELECT ee.turn_id, ee.passage_id FROM {entry} ee
        WHERE ee.pool_id = held.pool_id AND ee.turn_id = t.id
          AND NOT EXISTS (
            SELECT 1 FROM {judgment} r
            WHERE r.judge_id = held.judge_id AND r.turn_id = ee.turn_id AND r.passage_id = ee.passage_id
            OFFSET 0
          )
        ORDER BY ee."order", ee.id
        LIMIT 1
    ) e
    ORDER BY t.position
    LIMIT 1
) n"""
)

# The grade is written only when the user holds the copy and the pair is pooled for a turn of its
# unit, checked in the same statement; the upsert is relevance_judgment_submit's. The copy, its unit
# and the assignment are each looked up by key (OFFSET 0 keeps the generic plan from reaching the unit
# through the assignment's units, a cost that grows with the assignment), and the pair by the pool's
# unique (pool, turn, passage) index.
_GRADE_SQL = (
    "WITH"
    + _TOKEN_CTE
    + """,
held AS MATERIALIZED (
    SELECT tok.judge_id, u.turn_pks, a.pool_id
    FROM (SELECT ss.assessor_id, ss.unit_id FROM {slot} ss WHERE ss.id = $2::bigint OFFSET 0) s
    JOIN tok ON tok.user_id = s.assessor_id
    CROSS JOIN LATERAL (
        SELECT uu.turn_pks, uu.assignment_id FROM {unit} uu WHERE uu.id = s.unit_id OFFSET 0
    ) u
    JOIN {assignment} a ON a.id = u.assignment_id
)
INSERT INTO {judgment} AS r (judge_id, turn_id, passage_id, grade, time_spent_ms, created_at, updated_at)
SELECT held.judge_id, $3::bigint, $4::varchar, $5::smallint, $6::integer,
       $7::timestamptz, $7::timestamptz
FROM held
WHERE held.turn_pks @> jsonb_build_array($3::bigint)
  AND EXISTS (
    SELECT 1 FROM {entry} e
    WHERE e.pool_id = held.pool_id AND e.turn_id = $3::bigint AND e.passage_id = $4::varchar
  )
ON CONFLICT (judge_id, turn_id, passage_id) DO UPDATE SET grade = excluded.grade,
    time_spent_ms = CASE WHEN excluded.time_spent_ms IS NULL THEN r.time_spent_ms
                         ELSE COALESCE(r.time_spent_ms, 0) + excluded.time_spent_ms END,
    updated_at = excluded.updated_at
RETURNING r.turn_id, r.passage_id, r.grade"""
)

# When the next-passage statement finds nothing (1 request in a unit's worth): close the copy the user
# holds in the assignment if every pooled passage of its unit is graded and it has no PTKB step, and
# claim the first free copy of a unit the user has not held, under a row lock that skips copies other
# claims hold (as _work_lease_once does), unless the user still holds an open copy there. Returns the
# claimed copy; no row (a PTKB step left, no free copy, not a member) sends the request the ORM way.
# The statement sees the table as it was when it began, so `closed` and the holding check are joined
# by the ids the close returns. The free copy is found by walking the assignment's open copies in unit
# order (the partial index work_slot_open_in_order): the leased ones ahead of it are skipped, the
# completed ones are not in the index at all.
_ADVANCE_SQL = (
    "WITH"
    + _TOKEN_CTE
    + """,
member AS MATERIALIZED (
    SELECT tok.user_id, tok.judge_id, a.id AS assignment_id, a.pool_id, a.with_ptkb, a.lease_minutes
    FROM tok
    JOIN {assignment} a ON a.id = $2::bigint
    WHERE EXISTS (SELECT 1 FROM {member} m WHERE m.assignment_id = a.id AND m.user_id = tok.user_id)
),
held AS MATERIALIZED (
    SELECT s.id, u.turn_pks, u.topic_id
    FROM member
    CROSS JOIN LATERAL (
        SELECT ss.id, ss.unit_id FROM {slot} ss
        WHERE ss.assessor_id = member.user_id AND ss.completed_at IS NULL
        OFFSET 0
    ) s
    CROSS JOIN LATERAL (
        SELECT uu.turn_pks, uu.topic_id, uu.assignment_id FROM {unit} uu WHERE uu.id = s.unit_id OFFSET 0
    ) u
    WHERE u.assignment_id = member.assignment_id
),
closed AS (
    UPDATE {slot} s SET completed_at = $3::timestamptz
    FROM held, member
    WHERE s.id = held.id
      AND NOT (member.with_ptkb AND EXISTS (SELECT 1 FROM {statement} st WHERE st.topic_id = held.topic_id))
      AND NOT EXISTS (
        SELECT 1
        FROM jsonb_array_elements_text(held.turn_pks) AS unit_turn(pk)
        JOIN {entry} e ON e.pool_id = member.pool_id AND e.turn_id = unit_turn.pk::bigint
        WHERE NOT EXISTS (
            SELECT 1 FROM {judgment} r
            WHERE r.judge_id = member.judge_id AND r.turn_id = e.turn_id AND r.passage_id = e.passage_id
        )
      )
    RETURNING s.id
),
free AS (
    SELECT s.id
    FROM {slot} s
    WHERE s.assignment_id = $2::bigint
      AND s.completed_at IS NULL
      AND (s.assessor_id IS NULL OR s.leased_until < $3::timestamptz)
      AND EXISTS (SELECT 1 FROM member)
      AND NOT EXISTS (SELECT 1 FROM held WHERE held.id NOT IN (SELECT closed.id FROM closed))
      AND NOT EXISTS (
        SELECT 1 FROM {slot} mine
        WHERE mine.unit_id = s.unit_id AND mine.assessor_id = (SELECT member.user_id FROM member)
        OFFSET 0
      )
    ORDER BY s.position, s.copy
    LIMIT 1
    FOR UPDATE OF s SKIP LOCKED
)
UPDATE {slot} s
SET assessor_id = member.user_id, started_at = $3::timestamptz,
    leased_until = $3::timestamptz + make_interval(mins => member.lease_minutes)
FROM free, member
WHERE s.id = free.id
RETURNING s.id"""
)

# Each statement's parameters ($1, $2, ...), sent with fixed types: psycopg keys a prepared statement on
# its text and parameter types, and an int would otherwise go as int2, int4 or int8 by its size.
# (None: sent as given.)
_PARAMETERS = {
    "next": (None, Int8, None),  # token key, assignment pk, now
    "grade": (None, Int8, Int8, None, Int2, Int4, None),
    # token key, slot pk, turn pk, passage id, grade, time spent (ms) or None, now
    "advance": (None, Int8, None),  # token key, assignment pk, now
}
# Raw connection -> {(statement, which parameters are None): (runs, generation)}. A new connection is a
# new session and prepares again. psycopg forgets its prepared statements on a rollback and prepares
# them again at their next run, planned without the first run's settings below; re-preparing every
# REPREPARE_EVERY runs bounds how long such a plan is used.
_PREPARED_ON: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# A prepared statement keeps the plan made at its first run. Made from the table sizes of that moment
# (a campaign starts with no judgments), it would scan the judgments table instead of probing its
# index once the table has grown. So that first run is planned with sequential scans off (every
# lookup in these statements has an index), and the statements are prepared again every
# REPREPARE_EVERY runs in case PostgreSQL re-planned them meanwhile (after an ANALYZE) on a small table.
REPREPARE_EVERY = 500
# psycopg deallocates the least recently used prepared statement beyond this many on a connection:
# the superseded generations of these statements go first.
_PREPARED_MAX = 16


def _set(connection, command: str) -> None:
    # Through Django's client-binding cursor: a setting is not worth a prepared statement.
    with connection.cursor() as cursor:
        cursor.execute(command)


@functools.cache
def _sql() -> dict[str, str]:
    # Built from the models' table names, never from a request.
    tables = _tables()
    return {
        "next": _NEXT_SQL.format(**tables),
        "grade": _GRADE_SQL.format(**tables),
        "advance": _ADVANCE_SQL.format(**tables),
    }


@functools.cache
def _statements() -> dict[str, str]:
    # For psycopg, $n become named placeholders (a parameter may appear more than once).
    sql = _sql()
    assert not any("%" in text for text in sql.values())
    return {name: re.sub(r"\$(\d+)", r"%(p\1)s", text) for name, text in sql.items()}


# Each statement's columns, from libpq's text form (annotation.fastpool runs them so).
_COLUMNS = {
    "next": (int, bytes.decode, bytes.decode, int, bytes.decode, bytes.decode),
    "grade": (int, bytes.decode, int),
    "advance": (int,),
}


def _fast_execute(name: str, params: list) -> tuple | None:
    """Run a prepared statement: PostgreSQL then plans it once, not per request.

    Planning these joins costs more than running them (about 1.5 ms against 0.1 ms), so the settings
    have PostgreSQL keep one generic plan per prepared statement (plan_cache_mode). Run on a pooled
    connection through libpq when the caller allows it (annotation.fastpool says when and why);
    otherwise on Django's connection, prepared and run by psycopg through the extended protocol with
    the parameters bound on the server. Django's own cursors bind on the client and are never
    prepared; only these statements use a server-binding cursor.
    """
    from django.db import connection
    from django.db.backends.postgresql.base import ServerBindingCursor

    pooled = fastpool.pool()
    if pooled is not None and fastpool.usable(connection):
        return fastpool.execute(
            pooled,
            name,
            _sql()[name],
            params,
            _COLUMNS[name],
            reprepare_every=REPREPARE_EVERY,
            first_run=(b"SET enable_seqscan = off", b"RESET enable_seqscan"),
        )
    connection.ensure_connection()
    raw = connection.connection
    runs = _PREPARED_ON.get(raw)
    if runs is None:
        runs = _PREPARED_ON[raw] = {}
        raw.prepare_threshold = 0  # a server-binding query is prepared at its first run
        raw.prepared_max = _PREPARED_MAX
    values = {
        f"p{i}": value if kind is None or value is None else kind(value)
        for i, (kind, value) in enumerate(zip(_PARAMETERS[name], params, strict=True), start=1)
    }
    key = (name, tuple(value is None for value in params))
    count, generation = runs.get(key, (0, 0))
    if count >= REPREPARE_EVERY:
        count, generation = 0, generation + 1
    # A new generation is new text, hence a statement prepared (and planned) anew.
    sql = f"/* assay {name} {generation} */ {_statements()[name]}"
    raw_cursor = ServerBindingCursor(raw)
    cursor = (
        connection.make_debug_cursor(raw_cursor)
        if connection.queries_logged
        else connection.make_cursor(raw_cursor)
    )
    with cursor:
        if count == 0:
            _set(connection, "SET enable_seqscan = off")
            try:
                cursor.execute(sql, values)
                row = cursor.fetchone()
            finally:
                _set(connection, "RESET enable_seqscan")
        else:
            cursor.execute(sql, values)
            row = cursor.fetchone()
    runs[key] = (count + 1, generation)
    return row


def fast_next_step(*, token_key: str, assignment_pk: int, now: datetime | None = None) -> FastStep | None:
    """PostgreSQL only: the next passage of the open copy the token's user holds, in one statement.

    None when the statement cannot answer (see above): the caller then takes the ORM path.
    """
    row = _fast_execute("next", [token_key, assignment_pk, now or timezone.now()])
    if row is None:
        return None
    slot, unit, turn_id, turn_pk, passage_id, text = row
    return FastStep(slot, unit, turn_id, turn_pk, passage_id, text or "")


def fast_advance(*, token_key: str, assignment_pk: int, now: datetime | None = None) -> int | None:
    """PostgreSQL only: close the token's user's finished copy in the assignment and claim the next free
    one, in one statement; the claimed copy's pk, or None to take the ORM path."""
    try:
        row = _fast_execute("advance", [token_key, assignment_pk, now or timezone.now()])
    except IntegrityError:
        # The same user claiming from two tabs at once: the unique (unit, assessor) constraint held,
        # and the ORM path (which retries) answers.
        return None
    return row[0] if row else None


def fast_grade_submit(
    *,
    token_key: str,
    slot_pk: int,
    turn_pk: int,
    passage_id: str,
    grade: int,
    time_spent_ms: int | None,
    now: datetime | None = None,
) -> tuple[int, str, int] | None:
    """PostgreSQL only: record or revise the grade if the token's user holds the copy and the pair is
    pooled in its unit, in one statement; (turn_pk, passage_id, grade), or None to take the ORM path."""
    return _fast_execute(
        "grade", [token_key, slot_pk, turn_pk, passage_id, grade, time_spent_ms, now or timezone.now()]
    )
