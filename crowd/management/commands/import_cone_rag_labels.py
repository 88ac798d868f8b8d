"""`import_cone_rag_labels`: the CONE-RAG crowd study's NtR labels as judgments of a crowd judge."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand, import_judge_check
from annotation.models import Judge
from crowd.cone_rag.io import cone_rag_labels_import, parse_aliases


class Command(CollectionCommand):
    help = (
        "Import a CONE-RAG label file (TSV lines <batch>_<topic>_<turn>_<nuggetIndex>_<runAlias><TAB><0|1>) "
        "as nugget-to-response judgments of a crowd judge. The nugget index is the 1-based key [k] of the "
        "gold nugget set of --nugget-judge; each run alias is mapped to a run with --alias ALIAS=RUN_NAME, "
        "and the run's response for the turn must exist (import_cone_rag_responses). All or nothing, with "
        "file:line problems; importing the same file again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The label TSV file.")
        super().add_arguments(parser)
        parser.add_argument(
            "--nugget-judge", required=True, help="Judge whose gold nuggets the indexes name."
        )
        parser.add_argument(
            "--judge", default="mturk-majority", help="Crowd judge the labels belong to (created if new)."
        )
        parser.add_argument(
            "--alias",
            action="append",
            default=[],
            metavar="ALIAS=RUN",
            help="Map a run alias of the file to a run name; repeat for each alias.",
        )

    def handle(
        self, *args, path: str, collection: str, nugget_judge: str, judge: str, alias: list[str], **options
    ) -> None:
        target = self.get_collection(collection)
        gold = self.get_judge(nugget_judge)
        try:
            aliases = parse_aliases(alias)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not aliases:
            raise CommandError("give at least one --alias ALIAS=RUN_NAME")
        import_judge_check(judge, kind=Judge.Kind.CROWD)
        existing = Judge.objects.filter(name=judge).first()
        if existing is not None and existing.kind != Judge.Kind.CROWD:
            raise CommandError(f"judge {judge!r} exists and is a {existing.kind} judge, not a crowd judge")
        result = self.run_import(
            lambda: cone_rag_labels_import(
                path=path, collection=target, nugget_judge=gold, label_judge_name=judge, aliases=aliases
            )
        )
        totals = f"{result.created} created, {result.updated} updated, {result.unchanged} unchanged"
        self.stdout.write(f"{path}: labels of {judge}: {totals}")
        # The file names runs by alias only: say which run each alias's labels went to.
        for kind, counts in result.by_kind().items():
            self.stdout.write(f"  {kind}: {counts}")
