from django.core.management.base import CommandError

from annotation.commands import CollectionCommand
from annotation.nuggets.formats import FORMATS
from annotation.nuggets.io import nuggets_export
from annotation.rag_nuggets.io import created_nuggets_export

NUGGETIZER = "nuggetizer"


class Command(CollectionCommand):
    help = (
        "Write a judge's gold nugget set as our JSONL or as CONE-RAG JSON, turns in the set's order. "
        "With --dedup, only the de-duplicated set (nuggets not marked as duplicates, keys kept). --format "
        "nuggetizer writes nuggetizer's created nuggets: each question's ordered list with the vital/okay of "
        "--importance-judge (default: the judge's own; okay where there is none)."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--format", choices=[*FORMATS, NUGGETIZER], default="jsonl", dest="fmt")
        parser.add_argument("--dedup", action="store_true", help="Leave out nuggets marked as duplicates.")
        parser.add_argument(
            "--importance-judge",
            help="--format nuggetizer: judge whose vital/okay labels are written (default: the judge's own).",
        )
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, fmt, dedup, importance_judge, output, **options):
        target, owner = self.get_collection(collection), self.get_judge(judge)
        if importance_judge and fmt != NUGGETIZER:
            raise CommandError("--importance-judge applies to --format nuggetizer only")
        if fmt == NUGGETIZER:
            text = created_nuggets_export(
                collection=target,
                judge=owner,
                importance_judge=self.get_judge(importance_judge) if importance_judge else None,
            )
        else:
            text = nuggets_export(collection=target, judge=owner, fmt=fmt, dedup=dedup)
        if output:
            with open(output, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        else:
            self.stdout.write(text, ending="")
