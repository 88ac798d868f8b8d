from annotation.commands import CollectionCommand
from annotation.io import run_import


class Command(CollectionCommand):
    help = (
        "Import a run: a TREC run file (qid Q0 docid rank score tag), an iKAT JSON run, or TREC RAG 2024 "
        "answers JSONL. Rankings are stored whole per turn. All or nothing; re-importing changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--name", help="Run name (default: the run tag, run_name or run_id in the file).")
        parser.add_argument("--group", default="", help="Participating group that submitted the run.")

    def handle(self, *args, path, collection, name, group, **options):
        target = self.get_collection(collection)
        progress = self.command_progress(options, unit="rankings and responses stored")
        try:
            results = self.run_import(
                lambda: run_import(path=path, collection=target, name=name, group=group, progress=progress)
            )
        finally:
            progress.close()
        for run, result in results:
            self.stdout.write(f"{path}: run {run.name}: {result}")
