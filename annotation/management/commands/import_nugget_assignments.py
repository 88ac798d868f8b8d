from django.core.management.base import CommandError

from annotation.commands import CollectionCommand, add_judge_kind_arguments, import_judge
from annotation.rag_nuggets.io import assignments_import


class Command(CollectionCommand):
    help = (
        "Import nuggetizer's nugget assignments ({query, qid, answer_text, response_length, run_id, nuggets: "
        "[{text, importance, assignment}]} a line) as the named judge's support / partial_support / "
        "not_support labels of TREC RAG answers, matched by run_id and qid to the imported answers. Nuggets are "
        "matched by text within the qid against --nuggets-judge's list (an empty list included), or, without it, "
        "the judge's own list, created from the file where it has none. nuggetizer's record of a question a run "
        "did not answer (empty answer_text, every nugget not_support) and its 'failed' labels import as it wrote "
        "them. The file's vital/okay become the judge's own importance labels, named in the report. All or "
        "nothing; re-importing changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Name of the judge the assignments belong to.")
        add_judge_kind_arguments(parser)
        parser.add_argument("--nuggets-judge", help="Judge whose nugget lists the file's nuggets are.")

    def handle(self, *args, path, collection, judge, nuggets_judge, **options):
        target = self.get_collection(collection)
        owner = self.get_judge(nuggets_judge) if nuggets_judge else None
        if owner is not None and owner.name == judge:
            raise CommandError("--nuggets-judge is the judge itself: leave it out")
        result = self.run_import(
            lambda: assignments_import(
                path=path,
                collection=target,
                judge=import_judge(name=judge, path=path, options=options),
                nuggets_judge=owner,
            )
        )
        self.stdout.write(f"{path}: {result}")
