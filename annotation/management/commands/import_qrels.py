from annotation.commands import CollectionCommand, add_judge_kind_arguments, import_judge
from annotation.relevance.io import qrels_import


class Command(CollectionCommand):
    help = (
        "Import TREC qrels (qid 0 docid grade, grades 0-4) as relevance judgments of the named judge "
        "(created as an imported-file judge if new). All or nothing; re-importing changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge the labels belong to.")
        add_judge_kind_arguments(parser)
        parser.add_argument(
            "--require-passages",
            action="store_true",
            help="Reject qrels naming passages not in the collection.",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Delete this judge's judgments on the collection that the file lacks.",
        )

    def handle(self, *args, path, collection, judge, require_passages, replace, **options):
        target = self.get_collection(collection)
        result = self.run_import(
            lambda: qrels_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path, options=options),
                require_passages=require_passages,
                replace=replace,
            )
        )
        self.stdout.write(f"{path}: {result}")
