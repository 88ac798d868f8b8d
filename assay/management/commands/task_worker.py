"""task_worker: run one background task worker, which a process manager keeps running."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from assay.workers import TaskWorker, WorkerLockError, worker_id_default, worker_run


class Command(DbWorkerCommand):
    help = (
        "Run one background task worker (judge jobs, large uploads, the daily upkeep) on the queue kept in "
        "the database: django-tasks-db's db_worker, holding a lock that shows its tasks' jobs as "
        "interrupted the moment it dies. It restarts nothing: run it under a process manager (make serve, "
        "make run, deploy/systemd/assay-worker@.service), one process per worker, on as many machines as "
        "you like. SIGTERM or Ctrl-C stops it: it finishes its task within --grace seconds, or stops it "
        "and queues its job again. It exits when it loses the database; the manager starts it again."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--grace",
            type=float,
            default=10.0,
            help="Seconds a stopping worker may take to finish its task before the task is stopped.",
        )
        # Unique among live workers without being told (the lock refuses a second one with the same id).
        parser.set_defaults(worker_id=worker_id_default(), reload=False)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["reload"]:
            raise CommandError("the task worker does not reload: its manager starts it again")
        if options["grace"] < 0:
            raise CommandError("--grace must be at least 0")
        self.configure_logging(options["verbosity"])
        worker = TaskWorker(
            grace_s=options["grace"],
            queue_names=options["queue_name"].split(","),
            interval=options["interval"],
            batch=options["batch"],
            backend_name=options["backend_name"],
            startup_delay=options["startup_delay"],
            max_tasks=options["max_tasks"],
            worker_id=options["worker_id"],
        )
        try:
            worker_run(worker=worker)
        except WorkerLockError as exc:
            raise CommandError(str(exc)) from exc
