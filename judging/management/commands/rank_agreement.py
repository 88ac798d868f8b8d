"""`rank_agreement`: do two judges rank the runs the same way?"""

from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from judging.agreement.reports import rank_csv, rank_report, rank_text
from judging.agreement.run_scores import IMPORTANCE_MEASURES, RUN_MEASURES


class Command(CollectionCommand):
    help = (
        "System-level agreement: score every run of the collection by a measure under judge A and under judge B, "
        "rank them, and report Kendall's tau-b and Spearman's rho between the two orderings."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--measure", required=True, choices=list(RUN_MEASURES))
        parser.add_argument("--judges", nargs=2, required=True, metavar="JUDGE", help="Judge A and judge B.")
        parser.add_argument(
            "--importance-judge",
            help=f"Judge whose vital/okay labels count for the nugget-* measures (default: {IMPORTANCE_DEFAULT}).",
        )
        parser.add_argument("--format", choices=["text", "json", "csv"], default="text")

    def handle(self, *args, collection, measure, judges, importance_judge, format, **options):
        target = self.get_collection(collection)
        judge_a, judge_b = (self.get_judge(name) for name in judges)
        importance = self.get_judge(importance_judge) if importance_judge else None
        if importance is not None and measure not in IMPORTANCE_MEASURES:
            raise CommandError("--importance-judge applies to the nugget-* measures only")
        try:
            report = rank_report(
                collection=target,
                measure=measure,
                judge_a=judge_a,
                judge_b=judge_b,
                importance_judge=importance,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if report["n_runs"] == 0:
            hint = (
                "; the vital scores need vital/okay labels: name their judge with --importance-judge"
                if "vital" in measure and importance is None
                else ""
            )
            raise CommandError(
                f"no run of collection {target.name} has a {measure} score under both {judge_a.name} and "
                f"{judge_b.name}{hint}"
            )
        if format == "json":
            self.stdout.write(json.dumps(report, indent=2))
        elif format == "csv":
            self.stdout.write(rank_csv(report), ending="")
        else:
            self.stdout.write(rank_text(report), ending="")
