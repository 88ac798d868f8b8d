from annotation.commands import CollectionCommand, add_judge_kind_arguments, import_judge
from annotation.models import Judge
from annotation.nuggets.formats import FORMATS
from annotation.nuggets.io import gold_responses_import


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
        add_judge_kind_arguments(parser)
        parser.add_argument(
            "--nugget-judge",
            help="Judge whose nuggets the responses use (default: --judge). With --format cone-rag a new "
            "name is created, and a judge with no nuggets on a turn gets them from the file's texts.",
        )
        parser.add_argument("--format", choices=FORMATS, default="jsonl", dest="fmt")

    def handle(self, *args, path, collection, judge, nugget_judge, fmt, **options):
        target = self.get_collection(collection)
        result = self.run_import(
            lambda: gold_responses_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path, options=options),
                nugget_judge=self.nugget_judge(nugget_judge, fmt=fmt, path=path),
                fmt=fmt,
            )
        )
        self.stdout.write(f"{path}: {result}")

    def nugget_judge(self, name: str | None, *, fmt: str, path: str) -> Judge | None:
        if name and fmt == "cone-rag" and not Judge.objects.filter(name=name).exists():
            # CONE-RAG names nuggets by text: a new nugget judge gets its nuggets from the file.
            return import_judge(name=name, path=path)
        return self.get_judge(name) if name else None
