"""Moves a database made under the crowd app's first label, "mturk", to its label "crowd".

Django has no app relabel: a database migrated under the old label records the crowd migrations as
("mturk", name) in django_migrations and its content types as app_label "mturk". Left alone, the
migration loader would take the crowd migrations for unapplied and create tables that already exist,
and post_migrate would add "crowd" content types beside the old ones, stranding the permissions
granted on them. So, as other projects do by hand before deploying a relabel, both rows are rewritten
in place, in one transaction, before the migration loader reads the history. The crowd app's
`migrate` command runs this first, so every `manage.py migrate` (deploys, `make run`, the test
database) takes an old database across; on a fresh or already moved database it changes nothing.
Permissions and admin log entries point at content types by id, so they follow unchanged, and the
tables keep their names (each model's `db_table`).
"""

from __future__ import annotations

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

OLD_LABEL = "mturk"
NEW_LABEL = "crowd"


def crowd_history_relabel(*, connection: BaseDatabaseWrapper) -> int:
    """Rewrite the "mturk" migration rows and content types to "crowd"; return how many rows moved."""
    tables = set(connection.introspection.table_names())
    if "django_migrations" not in tables:
        return 0
    moved = 0
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        # A row already under the new label wins: the migration it records is applied either way.
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = %s AND name IN "
            "(SELECT name FROM django_migrations WHERE app = %s)",
            [OLD_LABEL, NEW_LABEL],
        )
        cursor.execute("UPDATE django_migrations SET app = %s WHERE app = %s", [NEW_LABEL, OLD_LABEL])
        moved += cursor.rowcount
        if "django_content_type" in tables:
            # Where a "crowd" row exists for the same model, the old row stays for
            # remove_stale_contenttypes rather than breaking the unique (app_label, model).
            cursor.execute(
                "UPDATE django_content_type SET app_label = %s WHERE app_label = %s AND model NOT IN "
                "(SELECT model FROM django_content_type WHERE app_label = %s)",
                [NEW_LABEL, OLD_LABEL, NEW_LABEL],
            )
            moved += cursor.rowcount
    return moved
