from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrateCommand
from django.db import connections

from crowd.relabel import crowd_history_relabel


class Command(DjangoMigrateCommand):
    """Django's `migrate`, after moving a database made under the crowd app's old label (crowd/relabel.py).

    The move must happen before the migration loader reads django_migrations, which Django's own
    `pre_migrate` signal comes too late for; overriding the command is Django's documented way to run
    first, and it covers every caller of `migrate`.
    """

    def handle(self, *args: Any, **options: Any) -> None:
        moved = crowd_history_relabel(connection=connections[options["database"]])
        if moved and options["verbosity"] >= 1:
            self.stdout.write(f"Moved {moved} migration and content type rows from label 'mturk' to 'crowd'.")
        super().handle(*args, **options)
