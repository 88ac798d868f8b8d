"""A stage: a temporary table holding one import's rows, so that a file of any size is checked and written in
the database (pairs given twice, references missing, the upsert) with the same memory whatever its size.

Every stage has a `line` column first (the file's line of the row), so that what its checks find is said
at its line. The table lives in the caller's transaction: a rollback drops it with everything else.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from core.bulk import rows_copy


@dataclass(frozen=True)
class Restated:
    """What `Stage.restate` did to the stored rows: units new, units whose label changed, units as staged."""

    created: int
    updated: int
    unchanged: int


class Stage:
    """Rows (line, ...columns) in a temporary table of the connection `db`, each file's row one of a `key`
    (if any) that no two lines may share; created by `staged`, filled by `fill`, then `seal`ed (indexed)
    before it is read."""

    def __init__(
        self, db: str, prefix: str, columns: Sequence[tuple[str, str]], *, key: Sequence[str] = ()
    ) -> None:
        self.connection = connections[db]
        self.key = tuple(key)
        self.name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        self.table = self.connection.ops.quote_name(self.name)
        self.columns = [("line", "integer NOT NULL"), *columns]
        self.rows = 0
        self.unique = False

    def fill(self, rows: Iterable[Sequence[Any]]) -> None:
        """Add `rows` as they come, in one COPY (core/bulk.py): the caller streams them from its file, so a
        file of any size takes the same memory. Nothing that makes the rows may use the database meanwhile
        (the connection is busy with the COPY): they are read from a file, checked against what the caller
        read before."""
        self.rows += rows_copy(
            db=self.connection.alias, table=self.table, columns=[name for name, _ in self.columns], rows=rows
        )

    def seal(self, *indexes: Sequence[str]) -> None:
        """Index the filled stage on its key and on each column list of `indexes`.

        The key's index is made unique if it can be: a file without a repeated key, the rule, then needs
        no search for repeats (`repeated`)."""
        key = self.connection.ops.quote_name(f"{self.name}_key")
        columns = ", ".join(self.key)
        with self.connection.cursor() as cursor:
            if not self.key:
                self.unique = True
            else:
                try:
                    with transaction.atomic(using=self.connection.alias):
                        cursor.execute(f"CREATE UNIQUE INDEX {key} ON {self.table} ({columns})")
                    self.unique = True
                except IntegrityError:
                    cursor.execute(f"CREATE INDEX {key} ON {self.table} ({columns})")
            for number, columns_of in enumerate(indexes):
                index = self.connection.ops.quote_name(f"{self.name}_{number}")
                cursor.execute(f"CREATE INDEX {index} ON {self.table} ({', '.join(columns_of)})")
            cursor.execute(f"ANALYZE {self.table}")  # the planner knows nothing of a fresh temporary table

    def sampled(
        self, where: str, *, columns: str, params: Sequence[Any] = (), limit: int
    ) -> tuple[int, list[tuple[Any, ...]]]:
        """How many rows of the stage (aliased `s`) meet `where`, and the first `limit` of them by line,
        each as `columns`: what a check reports of the rows it refuses (the count, then a few by line)."""
        rows = f"FROM {self.table} s WHERE {where}"
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) {rows}", list(params))
            (count,) = cursor.fetchone()
            if not count:
                return 0, []
            cursor.execute(f"SELECT {columns} {rows} ORDER BY s.line LIMIT %s", [*params, limit])
            return count, [tuple(row) for row in cursor.fetchall()]

    def repeated(self, *, limit: int) -> tuple[int, list[tuple[Any, ...]]]:
        """How many rows repeat the key of an earlier line, and the first `limit` of them by line, each as
        (line, *key, the key's first line)."""
        if self.unique:
            return 0, []
        key = self.key
        columns = ", ".join(key)
        same = " AND ".join(f"f.{column} = s.{column}" for column in key)
        first = f"SELECT {columns}, MIN(line) AS first FROM {self.table} GROUP BY {columns}"
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM ({first}) f")
            count = self.rows - cursor.fetchone()[0]
            if not count:
                return 0, []
            picked = ", ".join(f"s.{column}" for column in key)
            cursor.execute(
                f"SELECT s.line, {picked}, f.first FROM {self.table} s JOIN ({first}) f ON {same} "
                "WHERE s.line > f.first ORDER BY s.line LIMIT %s",
                [limit],
            )
            return count, [tuple(row) for row in cursor.fetchall()]

    def restate(
        self,
        table: str,
        *,
        owner: tuple[str, Any],
        unit: Sequence[str],
        label: str,
        copied: Sequence[str] = (),
        fixed: Mapping[str, Any] | None = None,
    ) -> Restated:
        """Make the rows of `table` (quoted) whose `owner` column holds the owner's value (a judge's labels)
        say the sealed stage's `label` for each staged unit, both tables naming a unit by the `unit` columns.

        A unit `table` holds with another label gets the staged one (and `updated_at` moves); a unit it lacks
        is inserted with the stage's unit, label and `copied` columns and the `fixed` values, created and
        updated now; a label equal to what is stored changes nothing, so the same file twice changes nothing.
        Each step is one statement over the whole stage (counts, update, insert): neither the file nor the
        stored rows pass through Python. The staged units are unique (the caller checked `repeated`).
        """
        column, value = owner
        fixed = fixed or {}
        same = " AND ".join([f"r.{column} = %s", *(f"r.{name} = s.{name}" for name in unit)])
        differs = f"r.{label} <> s.{label}"
        now = self.connection.ops.adapt_datetimefield_value(timezone.now())
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"SELECT COUNT(*), COUNT(r.{column}), COALESCE(SUM(CASE WHEN {differs} THEN 1 ELSE 0 END), 0) "
                f"FROM {self.table} s LEFT JOIN {table} r ON {same}",
                [value],
            )
            total, stored, changed = cursor.fetchone()
            if changed:
                cursor.execute(
                    f"UPDATE {table} r SET {label} = s.{label}, updated_at = %s FROM {self.table} s "
                    f"WHERE {same} AND {differs}",
                    [now, value],
                )
            if total > stored:
                from_stage = [*unit, label, *copied]
                columns = ", ".join([column, *from_stage, *fixed, "created_at", "updated_at"])
                values = ", ".join(["%s", *(f"s.{name}" for name in from_stage), *["%s"] * (len(fixed) + 2)])
                cursor.execute(
                    f"INSERT INTO {table} ({columns}) SELECT {values} FROM {self.table} s "
                    f"WHERE NOT EXISTS (SELECT 1 FROM {table} r WHERE {same})",
                    [value, *fixed.values(), now, now, value],
                )
        return Restated(created=total - stored, updated=changed, unchanged=stored - changed)


S = TypeVar("S", bound=Stage)


@contextmanager
def staged(made: S) -> Iterator[S]:
    """`made`'s table created for one file, inside the caller's transaction (its rollback drops the table
    too), and dropped after."""
    if not made.connection.in_atomic_block:
        raise RuntimeError("a stage lives inside the transaction of its import")
    definition = ", ".join(f"{name} {kind}" for name, kind in made.columns)
    with made.connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE {made.table} ({definition})")
    yield made
    # Only after success: after an error, PostgreSQL refuses every statement until the rollback, which
    # drops the table anyway.
    with made.connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {made.table}")
