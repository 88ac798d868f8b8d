from annotation.collection.io import passages_import
from annotation.commands import CollectionCommand
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Import passages JSONL into a collection (created if new): iKAT {doc_id, passage_id, passage_text} "
        "(id doc_id:passage_id) or {id, text|contents, title}. All or nothing; re-importing changes nothing."
    )
    create_collection = True

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)

    def handle(self, *args, path, collection, **options):
        def work():
            target = self.get_collection(collection)
            return target, passages_import(path=path, collection=target)

        target, result = self.run_import(work)
        self.stdout.write(
            f"{path}: {result}; collection {target.name} has {plural(target.passages.count(), 'passage')}"
        )
