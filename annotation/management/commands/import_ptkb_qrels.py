"""import_ptkb_qrels: PTKB qrels (turn 0 statement_id 0|1) as PTKB judgments of a judge."""

from django.core.management.base import CommandParser

from annotation.commands import CollectionCommand, add_judge_kind_arguments, import_judge
from annotation.ptkb.io import ptkb_qrels_import


class Command(CollectionCommand):
    help = (
        "Import PTKB qrels (turn 0 statement_id 0|1) as PTKB statement relevance labels of the named judge "
        "(created as an imported-file judge if new). Turns and statements must exist in the collection. "
        "All or nothing, with file:line for every problem; re-importing the same file changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge the labels belong to.")
        add_judge_kind_arguments(parser)
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Delete this judge's PTKB labels on the collection that the file lacks.",
        )

    def handle(self, *args, path, collection, judge, replace, **options):
        target = self.get_collection(collection)
        result = self.run_import(
            lambda: ptkb_qrels_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path, options=options),
                replace=replace,
            )
        )
        self.stdout.write(f"{path}: {result}")
