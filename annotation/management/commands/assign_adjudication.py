"""`assign_adjudication`: send the pairs a collection's judges dispute to an adjudicator, and write the
agreed ones to a new judge."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.relevance.adjudication.rules import DisputeRule
from annotation.relevance.adjudication.services import AdjudicationRefused, adjudication_assign
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Compare the relevance grades of --judges on a collection's pairs that two or more of them graded "
        "(grades of planted gold pairs left out). Pairs whose grades differ by at least --min-difference, or "
        "with --across-threshold fall on both sides of --relevant-from, go to --adjudicator's queue; the "
        "other pairs are agreed and written now to the new judge --name with their lower median grade, the "
        "adjudicator's grades as they are given. Export the result with export_qrels --judge NAME. "
        "Assigned once per name: run again, it is refused and nothing changes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--judges", nargs="+", required=True, help="Two or more judges to compare.")
        parser.add_argument(
            "--min-difference",
            type=int,
            default=2,
            help="A pair is disputed from this grade difference (default 2).",
        )
        parser.add_argument(
            "--across-threshold",
            action="store_true",
            help="Also dispute pairs some judges grade relevant (from --relevant-from) and some not.",
        )
        parser.add_argument(
            "--relevant-from", type=int, default=2, help="Relevant from this grade (default 2)."
        )
        parser.add_argument("--adjudicator", required=True, help="Username of the adjudicator.")
        parser.add_argument("--name", required=True, help="Name of the judge the adjudication writes.")
        parser.add_argument(
            "--show-grades",
            action="store_true",
            help="Show the adjudicator the earlier grades and their judges.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = self.get_collection(options["collection"])
        judges = [self.get_judge(name) for name in options["judges"]]
        adjudicator = get_user_model().objects.filter(username=options["adjudicator"]).first()
        if adjudicator is None:
            raise CommandError(f"no account {options['adjudicator']!r}")
        rule = DisputeRule(
            min_difference=options["min_difference"],
            across_threshold=options["across_threshold"],
            relevant_from=options["relevant_from"],
        )
        try:
            assigned = adjudication_assign(
                collection=collection,
                judges=judges,
                adjudicator=adjudicator,
                name=options["name"],
                rule=rule,
                show_grades=options["show_grades"],
            )
        except AdjudicationRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{options['name']}: {plural(assigned.agreed, 'agreed pair')} written, "
            f"{plural(assigned.disputed, 'disputed pair')} in {adjudicator.get_username()}'s queue, "
            f"{plural(assigned.single, 'pair')} graded by one judge only left out"
        )
