"""The triggers that keep `PassageCount` (how many passages each collection holds) true, written by
PostgreSQL with the passages.

A passage file can hold millions of passages; the pages that list collections (home, the collection's
page, the nugget index) and the API's passage list show how many a collection holds. Counting them on
each view reads the whole collection's index. Every writer of passages (the import's staged statements,
`bulk_create`, the admin, a cascade) goes through the table, so its statement-level triggers keep the
count, in the writer's transaction:

- an INSERT adds the statement's new rows to their collections' counts (`INSERT ... ON CONFLICT DO
  UPDATE`); the row stays locked until the writer commits, which only another writer of the same
  collection's passages waits for (an import is one transaction anyway);
- a DELETE takes the statement's old rows off;
- a TRUNCATE empties the counts.

A passage never moves to another collection (no code updates `collection_id`), so UPDATE is not
followed: the import's updates of titles and texts cost the triggers nothing.

`passage_count_install` puts them in place after `migrate` (and after a test flush) from annotation's
`post_migrate`, idempotently; when it (re)makes them it counts every collection's passages again in the
same transaction, so an existing database and a test database made without migrations start true.
"""

from __future__ import annotations

from typing import Any

from django.db import connections, transaction

from annotation.models import Passage, PassageCount
from core.triggers import statement_trigger_make, tables_present, triggers_on

PREFIX = "assay_passage_count"


def _quoted(using: str) -> tuple[str, str]:
    quote = connections[using].ops.quote_name
    return quote(Passage._meta.db_table), quote(PassageCount._meta.db_table)


def _functions(using: str) -> dict[str, tuple[str, str]]:
    """{trigger name: (its event clause, its function's body)}."""
    passages, kept = _quoted(using)
    counted = "SELECT collection_id, count(*) AS n FROM {rows} GROUP BY collection_id ORDER BY collection_id"
    return {
        f"{PREFIX}_insert": (
            "AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows",
            f"INSERT INTO {kept} AS k (collection_id, passages) {counted.format(rows='new_rows')} "
            "ON CONFLICT (collection_id) DO UPDATE SET passages = k.passages + excluded.passages;",
        ),
        f"{PREFIX}_delete": (
            "AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows",
            f"UPDATE {kept} AS k SET passages = k.passages - o.n FROM ({counted.format(rows='old_rows')}) o "
            "WHERE k.collection_id = o.collection_id;",
        ),
        f"{PREFIX}_truncate": ("AFTER TRUNCATE ON {table}", f"DELETE FROM {kept};"),
    }


def _body(statement: str) -> str:
    return f"\nBEGIN\n{statement}\nRETURN NULL;\nEND\n"


def passage_count_install(*, using: str = "default") -> bool:
    """Install (idempotently) the triggers on the passages' table, once both tables exist; when any was
    missing or differs from what this module makes, (re)make them all and count every collection's
    passages again, in one transaction. Whether it (re)made them."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    passages, kept = _quoted(using)
    wanted = _functions(using)
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if len(tables_present(cursor, [Passage._meta.db_table, PassageCount._meta.db_table])) < 2:
            return False
        on_passages = triggers_on(cursor, [Passage._meta.db_table]).get(Passage._meta.db_table, {})
        present = {name: source for name, source in on_passages.items() if name.startswith(PREFIX)}
        if present == {name: _body(statement) for name, (_, statement) in wanted.items()}:
            return False
        # Locks the passages against writes until commit: no row slips between the count and the triggers.
        cursor.execute(f"LOCK TABLE {passages} IN SHARE ROW EXCLUSIVE MODE")
        for name, (event, statement) in wanted.items():
            statement_trigger_make(cursor, name=name, on=event.format(table=passages), body=_body(statement))
        cursor.execute(f"DELETE FROM {kept}")
        cursor.execute(
            f"INSERT INTO {kept} (collection_id, passages) "
            f"SELECT collection_id, count(*) FROM {passages} GROUP BY collection_id"
        )
    return True


def passage_count_install_receiver(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """annotation's `post_migrate` receiver."""
    passage_count_install(using=using)
