from annotation.collection.io import run_import
from annotation.commands import CollectionCommand


class Command(CollectionCommand):
    help = (
        "Import a run: a TREC run file (qid Q0 docid rank score tag), an iKAT JSON run, or TREC RAG 2024 "
        "answers JSONL (which create the one-turn topics they name). Rankings are stored whole per turn. "
        "All or nothing; re-importing changes nothing. --create starts a new collection from the file, as a "
        "TREC RAG collection starts from the track's answers."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--name", help="Run name (default: the run tag, run_name or run_id in the file).")
        parser.add_argument("--group", default="", help="Participating group that submitted the run.")
        parser.add_argument(
            "--create",
            action="store_true",
            help="Create the collection if it does not exist (left uncreated when the file is refused). "
            "Without it an unknown collection is refused, so a mistyped name never starts a new one.",
        )

    def handle(self, *args, path, collection, name, group, create, **options):
        self.create_collection = create
        progress = self.command_progress(options, unit="rankings and responses stored")

        def work():
            target = self.get_collection(collection)
            return run_import(path=path, collection=target, name=name, group=group, progress=progress)

        try:
            results = self.run_import(work)
        finally:
            progress.close()
        for run, result in results:
            self.stdout.write(f"{path}: run {run.name}: {result}")
            for warning in run.report.get("warnings", []):
                self.stdout.write(f"  warning: {warning}")
