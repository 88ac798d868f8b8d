"""What PostgreSQL holds of the triggers Assay installs itself: which tables exist, and which triggers each
carries with what function source.

Five kinds of bookkeeping are kept by triggers rather than by Python (the table revisions,
`core/revisions.py`; the judges with labels, `annotation/labels/judge_labels.py`; the passage counts,
`annotation/collection/passage_count.py`; the nugget sets' counts per turn, `annotation/nuggets/counts.py`;
the crowd campaign page's figures, `crowd/figures/triggers.py`),
so that every writer keeps them true. Each installs their triggers from a `post_migrate` receiver, idempotently, and only on the
tables that exist (`migrate <one app>` sends post_migrate for every app, some of whose tables are made by
a later migrate); they read both answers here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def tables_present(cursor: Any, tables: Iterable[str]) -> list[str]:
    """Those of `tables` that exist as ordinary or partitioned tables on the search path, sorted."""
    cursor.execute(
        "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relkind IN ('r', 'p')"
        " AND pg_table_is_visible(oid)",
        [sorted(set(tables))],
    )
    return sorted(row[0] for row in cursor.fetchall())


def triggers_on(cursor: Any, tables: Iterable[str]) -> dict[str, dict[str, str]]:
    """{table: {trigger name: the source of the function it runs}} of every user trigger on `tables`
    (a table without one is left out)."""
    cursor.execute(
        "SELECT c.relname, t.tgname, p.prosrc FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid"
        " WHERE NOT t.tgisinternal AND c.relname = ANY(%s) AND pg_table_is_visible(c.oid)",
        [sorted(set(tables))],
    )
    found: dict[str, dict[str, str]] = {}
    for table, trigger, source in cursor.fetchall():
        found.setdefault(table, {})[trigger] = source
    return found


def statement_trigger_make(cursor: Any, *, name: str, on: str, body: str) -> None:
    """(Re)make the PL/pgSQL function `name`() of `body` and the statement-level trigger `name` that runs
    it; `on` is the trigger's event and table, e.g. `AFTER INSERT ON "t" REFERENCING NEW TABLE AS new_rows`."""
    cursor.execute(f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $${body}$$")
    cursor.execute(f"CREATE OR REPLACE TRIGGER {name} {on} FOR EACH STATEMENT EXECUTE FUNCTION {name}()")
