from annotation.commands import CollectionCommand
from annotation.support.io import support_labels_lines


class Command(CollectionCommand):
    help = (
        "Write a judge's support labels as JSONL in the shape import_support_labels reads "
        '({"run_id", "topic_id", "sentence_index", "passage_id", "label"}), ordered by run, topic, sentence.'
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, output, **options):
        lines = support_labels_lines(collection=self.get_collection(collection), judge=self.get_judge(judge))
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.writelines(lines)
        else:
            for line in lines:
                self.stdout.write(line, ending="")
