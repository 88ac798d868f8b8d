from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from devtools.openai_server import FakeOpenAI, toy_responder
from devtools.serving import serve_until_stopped


class Command(BaseCommand):
    help = (
        "Run a local OpenAI-compatible server on loopback (POST /v1/chat/completions) whose answers have the "
        "form each judge prompt asks for but mean nothing (each model name gives its own labels, the same every "
        "time, differing from another model's on a few items): for trying machine judges without an API key. "
        "Point Assay at it with OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=fake."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8011)
        parser.add_argument("--host", default="127.0.0.1", help="A loopback address.")
        parser.add_argument(
            "--latency", type=float, default=0.0, help="Seconds each answer takes (to try concurrency)."
        )
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
            server = FakeOpenAI(
                model_responder=toy_responder,
                latency=options["latency"],
                host=options["host"],
                port=options["port"],
                keep=100,
            ).start()
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"fake OpenAI-compatible server listening on {server.url}")
        self.stdout.flush()
        try:
            serve_until_stopped(seconds=options["seconds"], stop_with_parent=options["stop_with_parent"])
        finally:
            server.stop()
