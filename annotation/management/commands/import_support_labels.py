from annotation.commands import CollectionCommand, add_judge_kind_arguments, import_judge
from annotation.support.io import support_labels_import


class Command(CollectionCommand):
    help = (
        "Import support labels of RAG answer sentences as labels of the named judge (created if new): JSONL "
        'lines {"run_id", "topic_id", "sentence_index" (0-based), "passage_id", "label": "FS"|"PS"|"NS"}. '
        "The runs' answers must be imported first. All or nothing; re-importing changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge the labels belong to.")
        # --kind: the name this option had before every import took it.
        add_judge_kind_arguments(parser, "--kind")

    def handle(self, *args, path, collection, judge, **options):
        target = self.get_collection(collection)
        result = self.run_import(
            lambda: support_labels_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path, options=options),
            )
        )
        self.stdout.write(f"{path}: {result}")
