from annotation.commands import CollectionCommand
from annotation.relevance.io import qrels_lines


class Command(CollectionCommand):
    help = (
        "Write a judge's relevance judgments on a collection as TREC qrels ('qid 0 docid grade'), ordered by "
        "turn (natural order) then passage id, so two exports of the same labels are byte-identical. "
        "List judges with the admin or /api/judges/."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--judge", required=True, help="Name of the judge whose labels to write (e.g. nist-qrels)."
        )
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")
        parser.add_argument(
            "--include-gold",
            action="store_true",
            help="Also write an assessor's grades of planted gold pairs (left out by default).",
        )

    def handle(self, *args, collection, judge, output, include_gold, **options):
        lines = qrels_lines(
            collection=self.get_collection(collection), judge=self.get_judge(judge), include_gold=include_gold
        )
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.writelines(lines)
        else:
            for line in lines:
                self.stdout.write(line, ending="")
