"""Many rows at once: written in one COPY (the bulk writers' inserts, the stages' rows), named by one
array parameter (`in_array`), and the planner told of them once the import that wrote them commits
(`statistics_refresh`).

Django's `bulk_create` builds a model instance per row and an INSERT whose every value is a parameter
Django prepares and psycopg adapts one by one; at an evaluation's hundreds of thousands of labels that was
most of an import's time. psycopg's COPY sends the rows as one stream in the writer's transaction, the
database's fastest way in. COPY FROM fires the tables' statement-level triggers as an INSERT does, so the
revisions of core/revisions.py count it, and checks every constraint an INSERT checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections, models, router
from django.db.models.expressions import RawSQL


def rows_copy(*, db: str, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Write `rows` (each a value per column of `columns`, None for NULL) into `table` (quoted) of the
    connection `db`; returns how many were written. The caller holds the transaction. A row the table
    refuses raises Django's error of its kind (IntegrityError, DataError), as an INSERT through Django
    would."""
    connection = connections[db]
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    count = 0
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def model_rows_copy(
    model: type[models.Model], *, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """`rows_copy` into a model's table, by its columns' names (`judge_id`, not `judge`)."""
    db = router.db_for_write(model)
    table = connections[db].ops.quote_name(model._meta.db_table)
    return rows_copy(db=db, table=table, columns=columns, rows=rows)


def in_array(values: Iterable[Any], db_type: str = "bigint") -> RawSQL:
    """The right side of a `field__in=` that names many values (a block's thousands of ids) as one array
    parameter: an IN list of thousands of parameters costs the client more than the query (Django prepares
    each value, psycopg rewrites each placeholder, uncached in so long a query). `db_type` is the values'
    PostgreSQL type."""
    return RawSQL(f"SELECT unnest(%s::{db_type}[])", [list(values)])


def statistics_refresh(tables: Iterable[type[models.Model]]) -> None:
    """ANALYZE the models' tables, as PostgreSQL's documentation advises after a bulk load. Until
    autovacuum's next pass (a minute or more after the commit), the planner plans on the sizes it last
    saw: a label list's join over tables that grew from nothing to hundreds of thousands of rows was then
    hashed whole and sorted on disk (0.4 s) where an index walk reads a page (4 ms). Sampled, it takes
    under a second for every table of a collection of ten times the real size."""
    by_db: dict[str, set[str]] = {}
    for model in tables:
        by_db.setdefault(router.db_for_write(model), set()).add(model._meta.db_table)
    for db, names in by_db.items():
        connection = connections[db]
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE " + ", ".join(connection.ops.quote_name(name) for name in sorted(names)))
