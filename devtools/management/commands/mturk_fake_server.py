from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from devtools.mturk_server import FakeMTurkServer
from devtools.serving import serve_until_stopped


class Command(BaseCommand):
    help = (
        "Run the local MTurk-compatible server on loopback (requester JSON API checked against botocore's model, "
        "plus /worker/accept, /worker/preview and /mturk/externalSubmit). Point Assay at it with "
        "MTURK_ENDPOINT_URL=http://127.0.0.1:PORT. State lives in memory until the server stops."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8443)
        parser.add_argument("--host", default="127.0.0.1", help="A loopback address.")
        parser.add_argument(
            "--seconds", type=float, default=0, help="Stop after this long (0: until Ctrl-C)."
        )
        parser.add_argument(
            "--stop-with-parent",
            action="store_true",
            help="Stop when the process that started this one ends (make run starts the fakes so).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            server = FakeMTurkServer(host=options["host"], port=options["port"])
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        server.start()
        self.stdout.write(f"fake MTurk listening on {server.url}")
        self.stdout.flush()
        try:
            serve_until_stopped(seconds=options["seconds"], stop_with_parent=options["stop_with_parent"])
        finally:
            server.stop()
