from django.core.management.base import CommandError

from annotation.commands import CollectionCommand, add_judge_kind_arguments, import_judge
from annotation.nuggets.formats import FORMATS
from annotation.nuggets.io import nuggets_import
from annotation.rag_nuggets.io import created_nuggets_import

NUGGETIZER = "nuggetizer"


class Command(CollectionCommand):
    help = (
        "Import a gold nugget set (our JSONL or the CONE-RAG JSON) as the nuggets of the named judge, created as "
        "an imported-file judge if new; the judge's nuggets on the collection then equal the file. With "
        "--dedup-of, the file is a de-duplicated set of that judge's nuggets and each nugget is linked to its "
        "original by turn and key. --format nuggetizer reads nuggetizer's created nuggets ({query, qid, "
        "nuggets: [{text, importance}]} a line): ordered lists keyed 1..n (an empty one kept), and vital/okay "
        "(or nuggetizer's 'failed'; vital where a nugget has none, as nuggetizer's next step gives it) as the same "
        "judge's importance labels. All or nothing; re-importing changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge the nuggets belong to.")
        add_judge_kind_arguments(parser)
        parser.add_argument("--format", choices=[*FORMATS, NUGGETIZER], default="jsonl", dest="fmt")
        parser.add_argument("--dedup-of", help="Judge whose nugget set this file de-duplicates.")

    def handle(self, *args, path, collection, judge, fmt, dedup_of, **options):
        target = self.get_collection(collection)
        if fmt == NUGGETIZER:
            if dedup_of:
                raise CommandError("--dedup-of does not apply to --format nuggetizer")
            result = self.run_import(
                lambda: created_nuggets_import(
                    path=path, collection=target, judge=import_judge(name=judge, path=path, options=options)
                )
            )
            self.stdout.write(f"{path}: {result}")
            return
        original = self.get_judge(dedup_of) if dedup_of else None
        if original is not None and original.name == judge:
            raise CommandError("--dedup-of must name another judge than --judge")
        result = self.run_import(
            lambda: nuggets_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path, options=options),
                fmt=fmt,
                dedup_of=original,
            )
        )
        self.stdout.write(f"{path}: {result}")
