from annotation.commands import CollectionCommand
from annotation.nuggets.formats import FORMATS
from annotation.nuggets.io import gold_responses_export


class Command(CollectionCommand):
    help = (
        "Write a judge's gold responses as our JSONL (nuggets by key) or CONE-RAG JSON (matched and "
        "not-matched nuggets by text), in turn order."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--nugget-judge", help="Judge whose other nuggets are listed as not matched.")
        parser.add_argument("--format", choices=FORMATS, default="jsonl", dest="fmt")
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, nugget_judge, fmt, output, **options):
        text = gold_responses_export(
            collection=self.get_collection(collection),
            judge=self.get_judge(judge),
            nugget_judge=self.get_judge(nugget_judge) if nugget_judge else None,
            fmt=fmt,
        )
        if output:
            with open(output, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        else:
            self.stdout.write(text, ending="")
