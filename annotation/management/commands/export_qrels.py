from annotation.management.commands._base import CollectionCommand
from annotation.selectors import qrels_lines


class Command(CollectionCommand):
    help = "Write a judge's relevance judgments as TREC qrels, ordered by turn then passage id."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, output, **options):
        lines = qrels_lines(collection=self.get_collection(collection), judge=self.get_judge(judge))
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.writelines(lines)
        else:
            for line in lines:
                self.stdout.write(line, ending="")
