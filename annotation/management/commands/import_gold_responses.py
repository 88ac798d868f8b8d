from annotation.formats.nuggets import FORMATS
from annotation.management.commands._base import CollectionCommand, import_judge
from annotation.nuggets.transfer import gold_responses_import


class Command(CollectionCommand):
    help = (
        "Import gold responses (our JSONL, nuggets named by key; or CONE-RAG JSON, nuggets named by text) as "
        "the named judge's, linked to the nuggets of --nugget-judge (default: the same judge; in CONE-RAG, a "
        "turn for which that judge has no nugget gets its nuggets from the file's texts). All or nothing; "
        "re-importing changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge who wrote the responses.")
        parser.add_argument(
            "--nugget-judge", help="Judge whose nuggets the responses use (default: --judge)."
        )
        parser.add_argument("--format", choices=FORMATS, default="jsonl", dest="fmt")

    def handle(self, *args, path, collection, judge, nugget_judge, fmt, **options):
        target = self.get_collection(collection)
        nuggets_of = self.get_judge(nugget_judge) if nugget_judge else None
        result = self.run_import(
            lambda: gold_responses_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path),
                nugget_judge=nuggets_of,
                fmt=fmt,
            )
        )
        self.stdout.write(f"{path}: {result}")
