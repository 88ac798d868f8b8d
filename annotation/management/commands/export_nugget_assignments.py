from annotation.commands import CollectionCommand
from annotation.rag_nuggets.io import assignments_export


class Command(CollectionCommand):
    help = (
        "Write a judge's nugget assignments as nuggetizer's assignments file, an answer a line (runs by name, "
        "questions in the nugget set's order), in the shape import_nugget_assignments reads. With "
        "--nuggets-judge, only the assignments of that judge's nuggets."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--nuggets-judge", help="Only assignments of this judge's nuggets.")
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, nuggets_judge, output, **options):
        text = assignments_export(
            collection=self.get_collection(collection),
            judge=self.get_judge(judge),
            nuggets_judge=self.get_judge(nuggets_judge) if nuggets_judge else None,
        )
        if output:
            with open(output, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        else:
            self.stdout.write(text, ending="")
