"""`rank_agreement`: do two judges rank the runs the same way?"""

from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from judging.agreement.reports import rank_csv, rank_report, rank_text
from judging.agreement.selectors import RUN_MEASURES


class Command(CollectionCommand):
    help = (
        "System-level agreement: score every run of the collection by a measure under judge A and under judge B, "
        "rank them, and report Kendall's tau-b and Spearman's rho between the two orderings."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--measure", required=True, choices=list(RUN_MEASURES))
        parser.add_argument("--judges", nargs=2, required=True, metavar="JUDGE", help="Judge A and judge B.")
        parser.add_argument("--format", choices=["text", "json", "csv"], default="text")

    def handle(self, *args, collection, measure, judges, format, **options):
        target = self.get_collection(collection)
        judge_a, judge_b = (self.get_judge(name) for name in judges)
        try:
            report = rank_report(collection=target, measure=measure, judge_a=judge_a, judge_b=judge_b)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if report["n_runs"] == 0:
            raise CommandError(
                f"no run of collection {target.name} has a {measure} score under both {judge_a.name} and {judge_b.name}"
            )
        if format == "json":
            self.stdout.write(json.dumps(report, indent=2))
        elif format == "csv":
            self.stdout.write(rank_csv(report), ending="")
        else:
            self.stdout.write(rank_text(report), ending="")
