from annotation.commands import CollectionCommand
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from annotation.rag_nuggets.io import assignments_export


class Command(CollectionCommand):
    help = (
        "Write a judge's nugget assignments as nuggetizer's assignments file, an answer a line (runs by name, "
        "questions in the nugget set's order), in the shape import_nugget_assignments reads. As nuggetizer's "
        "pipeline writes it, every run has a line for every question of the nugget set (a question it did not "
        "answer: nuggetizer's all-not_support record); --answered-only writes the answers with labels only. "
        "With --nuggets-judge, only the assignments of that judge's nuggets."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--nuggets-judge", help="Only assignments of this judge's nuggets.")
        parser.add_argument(
            "--importance-judge",
            help=f"Judge whose vital/okay labels are written (default: {IMPORTANCE_DEFAULT}).",
        )
        parser.add_argument(
            "--answered-only",
            action="store_true",
            help="Only the answers that have labels (not nuggetizer's way).",
        )
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(
        self, *args, collection, judge, nuggets_judge, importance_judge, answered_only, output, **options
    ):
        lines = assignments_export(
            collection=self.get_collection(collection),
            judge=self.get_judge(judge),
            nuggets_judge=self.get_judge(nuggets_judge) if nuggets_judge else None,
            importance_judge=self.get_judge(importance_judge) if importance_judge else None,
            answered_only=answered_only,
        )
        if output:
            with open(output, "w", encoding="utf-8", newline="") as handle:
                handle.writelines(lines)
        else:
            for line in lines:
                self.stdout.write(line, ending="")
