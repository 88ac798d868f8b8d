from annotation.collection.io import topics_import
from annotation.commands import CollectionCommand
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Import topics into a collection (created if new): iKAT topics JSON (2023 or 2024 shape; turn ids "
        "become <number>_<turn_id>) or a TREC 'id<TAB>query' file. All or nothing; re-importing changes nothing."
    )
    create_collection = True

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)

    def handle(self, *args, path, collection, **options):
        def work():
            target = self.get_collection(collection)
            return target, topics_import(path=path, collection=target)

        target, result = self.run_import(work)
        self.stdout.write(
            f"{path}: {result}; collection {target.name} has {plural(target.topics.count(), 'topic')}, "
            f"{plural(target.turns.count(), 'turn')}"
        )
