"""Table revisions kept by PostgreSQL itself: what a stored report's fingerprint reads to know whether the
rows it was computed from have changed since.

Every table a report may read carries one statement-level trigger (AFTER INSERT, UPDATE, DELETE or
TRUNCATE) that sets that table's row in `assay_table_revision` to the next value of one sequence. The
trigger runs in the writer's transaction, so a new revision is visible exactly when the rows it stands for
are; it catches every writer (the ORM, the grade statement's raw SQL, COPY, the admin). Values come from a
sequence, so no two writes ever leave the same revision, even after a test database is flushed (the
sequence and this table are not models: a flush leaves them be).

The row lock a trigger takes is held from the end of the writing statement to its transaction's commit:
two transactions writing the same table wait for each other's commit only, not for each other's work.

The revision table, its sequence and the trigger function are plain SQL objects (core has no models): each
app installs the triggers of its own tables after `migrate` (and after a test flush) from a `post_migrate`
receiver (`revisions_install_receiver`), idempotently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import connections, models

TABLE = "assay_table_revision"
SEQUENCE = "assay_table_revision_seq"
FUNCTION = "assay_table_revision_bump"
TRIGGER = "assay_table_revision"

_OBJECTS = f"""
CREATE SEQUENCE IF NOT EXISTS {SEQUENCE};
CREATE TABLE IF NOT EXISTS {TABLE} (
    table_name text PRIMARY KEY,
    revision bigint NOT NULL
);
CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {TABLE} SET revision = nextval('{SEQUENCE}') WHERE table_name = TG_TABLE_NAME;
    IF NOT FOUND THEN
        INSERT INTO {TABLE} (table_name, revision) VALUES (TG_TABLE_NAME, nextval('{SEQUENCE}'))
        ON CONFLICT (table_name) DO UPDATE SET revision = EXCLUDED.revision;
    END IF;
    RETURN NULL;
END
$$;
"""


class RevisionMissing(LookupError):
    """A table read for a fingerprint has no revision: its trigger was never installed, so a change to it
    would go unseen. Raised rather than fingerprinting without it."""


def _tables(models_: Iterable[type[models.Model]]) -> list[str]:
    return sorted({model._meta.db_table for model in models_})


def revisions_install(*, models: Iterable[type[models.Model]], using: str = "default") -> list[str]:
    """Install (idempotently) the revision table, its sequence and function, and the trigger on each of
    these models' tables that has none yet; the tables newly given one. Proxy and unmanaged models are
    skipped (their table is another's, or not Assay's)."""
    tables = _tables(model for model in models if model._meta.managed and not model._meta.proxy)
    connection = connections[using]
    if connection.vendor != "postgresql" or not tables:
        return []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE t.tgname = %s AND c.relname = ANY(%s) AND pg_table_is_visible(c.oid)",
            [TRIGGER, tables],
        )
        present = {row[0] for row in cursor.fetchall()}
        missing = [table for table in tables if table not in present]
        if not missing:
            return []
        cursor.execute(_OBJECTS)
        for table in missing:
            cursor.execute(
                f"CREATE OR REPLACE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE"
                f" ON {quote(table)} FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
            )
        cursor.execute(
            f"INSERT INTO {TABLE} (table_name, revision) SELECT name, nextval('{SEQUENCE}')"
            " FROM unnest(%s::text[]) AS name ON CONFLICT (table_name) DO NOTHING",
            [missing],
        )
    return missing


def revisions_install_receiver(*, exclude: Iterable[str] = ()) -> Callable[..., None]:
    """A `post_migrate` receiver for an app's config: it installs the triggers of the app's own models,
    but those whose model_name is in `exclude` (bookkeeping no report reads)."""
    skipped = frozenset(exclude)

    def receiver(sender: Any, using: str = "default", **kwargs: Any) -> None:
        revisions_install(
            models=[
                model
                for model in sender.get_models(include_auto_created=True)
                if model._meta.model_name not in skipped
            ],
            using=using,
        )

    return receiver


def revisions_read(*, models: Iterable[type[models.Model]], using: str = "default") -> dict[str, int]:
    """The current revision of each of these models' tables (one query), by table name. A table without a
    revision (its trigger not installed) raises RevisionMissing."""
    tables = _tables(models)
    if not tables:
        return {}
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT table_name, revision FROM {TABLE} WHERE table_name = ANY(%s)", [tables])
        found = {name: int(revision) for name, revision in cursor.fetchall()}
    missing = [table for table in tables if table not in found]
    if missing:
        raise RevisionMissing(
            f"no revision trigger on {', '.join(missing)}: install it from its app's post_migrate"
        )
    return found
