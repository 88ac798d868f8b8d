"""`import_cone_rag_responses`: CONE-RAG participant responses as the responses of runs."""

from __future__ import annotations

from django.core.management.base import CommandParser

from annotation.commands import CollectionCommand
from crowd.cone_rag.io import cone_rag_responses_import


class Command(CollectionCommand):
    help = (
        'Import CONE-RAG participant responses, {"<topic>_<turn>": {"<run name>": "<response text>"}}, as '
        "the rank-1 response of each run for each turn. Runs missing from the collection are created as "
        "generation-only runs; turns must exist (import the topics first). All or nothing, with file:line "
        "problems; importing the same file again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The responses JSON file.")
        super().add_arguments(parser)

    def handle(self, *args, path: str, collection: str, **options) -> None:
        target = self.get_collection(collection)
        result = self.run_import(lambda: cone_rag_responses_import(path=path, collection=target))
        self.stdout.write(f"{path}: responses {result}")
