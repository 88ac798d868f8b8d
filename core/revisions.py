"""Table revisions kept by PostgreSQL itself: what a stored report's fingerprint reads to know whether the
rows it was computed from have changed since.

Every table a report may read carries one statement-level trigger (AFTER INSERT, UPDATE, DELETE or
TRUNCATE) that adds one to that table's count of writing statements in `assay_revision`. The trigger runs
in the writer's transaction, so a count is visible exactly when the rows it counts are; it catches every
writer (the ORM, the grade statement's raw SQL, COPY, the admin). A table's revision is the sum of its
counts: it grows with every committed write and never falls, even after a test database is flushed (this
table is not a model: a flush leaves it be).

The count a trigger adds to is one of SHARDS rows of the table, chosen by the writer's transaction id. A
row lock is held from the end of the writing statement to its commit, which on a server that flushes its
log includes the flush: with one row per table, every assessor's grade waited for the one before to reach
the disk (50 concurrent writers kept about a tenth of their rate), while with the counts spread over
SHARDS rows two grades rarely meet on one (docs/architecture.md).

The revision table and the trigger function are plain SQL objects (core has no models): each app
installs the triggers of its own tables after `migrate` (and after a test flush) from a `post_migrate`
receiver (`revisions_install_receiver`), idempotently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import connections, models

from core.triggers import tables_present, triggers_on

TABLE = "assay_revision"
FUNCTION = "assay_revision_count"
TRIGGER = "assay_revision"
SHARDS = 128

_OBJECTS = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    table_name text NOT NULL,
    shard integer NOT NULL,
    writes bigint NOT NULL,
    PRIMARY KEY (table_name, shard)
);
CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    slot integer := (txid_current() % {SHARDS})::integer;
BEGIN
    UPDATE {TABLE} SET writes = writes + 1 WHERE table_name = TG_TABLE_NAME AND shard = slot;
    IF NOT FOUND THEN
        INSERT INTO {TABLE} AS r (table_name, shard, writes) VALUES (TG_TABLE_NAME, slot, 1)
        ON CONFLICT (table_name, shard) DO UPDATE SET writes = r.writes + 1;
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
    """Install (idempotently) the revision table, its function, and the trigger on each of
    these models' tables that has none yet; the tables newly given one. Proxy and unmanaged models are
    skipped (their table is another's, or not Assay's)."""
    tables = _tables(model for model in models if model._meta.managed and not model._meta.proxy)
    connection = connections[using]
    if connection.vendor != "postgresql" or not tables:
        return []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        # `migrate <one app>` sends post_migrate for every app, some of whose tables may not exist yet:
        # their triggers are installed by the migrate that makes them.
        tables = tables_present(cursor, tables)
        if not tables:
            return []
        present = {table for table, triggers in triggers_on(cursor, tables).items() if TRIGGER in triggers}
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
            f"INSERT INTO {TABLE} (table_name, shard, writes) SELECT name, 0, 0"
            " FROM unnest(%s::text[]) AS name ON CONFLICT (table_name, shard) DO NOTHING",
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
    """The current revision of each of these models' tables (one query), by table name: its committed
    writing statements, summed over its shards. A table without a revision (its trigger not installed)
    raises RevisionMissing."""
    tables = _tables(models)
    if not tables:
        return {}
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT table_name, sum(writes) FROM {TABLE} WHERE table_name = ANY(%s) GROUP BY table_name",
            [tables],
        )
        found = {name: int(revision) for name, revision in cursor.fetchall()}
    missing = [table for table in tables if table not in found]
    if missing:
        raise RevisionMissing(
            f"no revision trigger on {', '.join(missing)}: install it from its app's post_migrate"
        )
    return found
