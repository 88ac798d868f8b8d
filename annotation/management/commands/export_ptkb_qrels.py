"""export_ptkb_qrels: a judge's PTKB statement relevance as `turn 0 statement_id 0|1` lines."""

from django.core.management.base import CommandParser

from annotation.commands import CollectionCommand
from annotation.ptkb.io import ptkb_qrels_lines


class Command(CollectionCommand):
    help = (
        "Write a judge's PTKB statement relevance labels as PTKB qrels (turn 0 statement_id 0|1), "
        "ordered by turn then statement id."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge whose PTKB labels to write.")
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, output, **options):
        lines = ptkb_qrels_lines(collection=self.get_collection(collection), judge=self.get_judge(judge))
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.writelines(lines)
        else:
            for line in lines:
                self.stdout.write(line, ending="")
