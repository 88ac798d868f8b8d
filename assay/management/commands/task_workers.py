"""task_workers: run the background task workers and keep them running."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from assay.upkeep import upkeep_schedule
from assay.workers import workers_supervise
from core.background import worker_tasks_abandon


class Command(BaseCommand):
    help = (
        "Run PROCESSES background task workers (manage.py db_worker: judge jobs, large uploads, the daily "
        "upkeep) on the queue kept in the database, start again any that dies, and stop them all on "
        "SIGTERM or Ctrl-C: each finishes its task within --grace seconds, or stops it and queues its job "
        "again. Run it on as many machines as you like, beside the same DATABASE_URL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--processes",
            type=int,
            default=settings.TASK_WORKERS,
            help="Workers to run, each one task at a time (default TASK_WORKERS, else 1).",
        )
        parser.add_argument(
            "--grace",
            type=float,
            default=10.0,
            help="Seconds a stopping worker may take to finish its task before the task is stopped.",
        )
        parser.add_argument(
            "--interval", type=float, default=1.0, help="Seconds an idle worker waits between looks."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["processes"] < 1:
            raise CommandError("--processes must be at least 1")
        upkeep_schedule()
        self.stdout.write(f"{options['processes']} task worker(s) on the database queue; Ctrl-C stops them")
        workers_supervise(
            processes=options["processes"],
            manage_py=settings.BASE_DIR / "manage.py",
            worker_args=["--interval", str(options["interval"]), "-v", str(options["verbosity"])],
            grace_s=options["grace"],
            say=lambda text: self.stdout.write(text),
            on_death=self._abandon,
        )

    def _abandon(self, worker_id: str) -> None:
        if count := worker_tasks_abandon(worker_id):
            self.stdout.write(f"its {count} running task(s) marked failed: their jobs show as interrupted")
