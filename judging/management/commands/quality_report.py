"""`quality_report`: each assessor's gold accuracy, agreement, speed and flags on a collection."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from core.wording import plural
from judging.quality.selectors import QualitySettings, collection_quality, quality_json

DEFAULTS = QualitySettings()


class Command(CollectionCommand):
    help = (
        "Report each assessor's quality on a collection's relevance work, as the quality dashboard shows it: "
        "accuracy on planted gold pairs (exact, within one grade, binary at --rel) with 95%% Wilson intervals "
        "and Cohen's kappa, kappa with co-assessors on the pairs they share, median seconds per judgment, "
        'with --adjudicated the agreement with that judge, and flags. A table by default, or JSON ({"assessors": {username: {...}}}).'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument(
            "--rel", type=int, default=DEFAULTS.rel, help="Relevant from this grade (default 2)."
        )
        parser.add_argument(
            "--gold-bar", type=float, default=DEFAULTS.gold_bar, help="Flag exact gold accuracy below this."
        )
        parser.add_argument(
            "--fast-seconds", type=float, default=DEFAULTS.fast_seconds, help="A judgment under this is fast."
        )
        parser.add_argument(
            "--adjudicated",
            metavar="JUDGE",
            help="Also give each assessor's agreement (exact and kappa) with this judge, e.g. an adjudicated one.",
        )
        parser.add_argument(
            "--min-n", type=int, default=DEFAULTS.min_n, help="Observations needed before a flag is raised."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["rel"] <= 4:
            raise CommandError("--rel is a grade from 1 to 4")
        if options["min_n"] < 1:
            raise CommandError("--min-n is at least 1")
        settings = QualitySettings(
            rel=options["rel"],
            gold_bar=options["gold_bar"],
            fast_seconds=options["fast_seconds"],
            min_n=options["min_n"],
        )
        adjudicated = self.get_judge(options["adjudicated"]) if options["adjudicated"] else None
        assessors = collection_quality(
            collection=self.get_collection(options["collection"]), settings=settings, adjudicated=adjudicated
        )
        if options["format"] == "json":
            self.stdout.write(
                json.dumps(quality_json(assessors, adjudicated=adjudicated), indent=2, default=str)
            )
            return
        if not assessors:
            self.stdout.write("no assessor has relevance work on this collection")
            return

        def figure(value: float | None, digits: int = 3) -> str:
            return "-" if value is None else f"{value:.{digits}f}"

        self.stdout.write(
            f"{'assessor':<20} {'gold':>5} {'exact':>6} {'within1':>7} {'binary':>6} {'gold_k':>6} "
            f"{'agree_k':>7} {'median_s':>8}"
            + (f" {'adj_n':>5} {'adj_ex':>6} {'adj_k':>6}" if adjudicated else "")
            + "  flags"
        )
        for a in assessors:
            self.stdout.write(
                f"{a.username:<20} {a.gold_n:>5} {figure(a.gold_exact.value):>6} {figure(a.gold_within_one.value):>7} "
                f"{figure(a.gold_binary.value):>6} {figure(a.gold_kappa):>6} {figure(a.agreement_kappa):>7} "
                f"{figure(a.median_seconds, 1):>8}"
                + (
                    f" {a.adjudicated.n:>5} {figure(a.adjudicated.value):>6} {figure(a.adjudicated_kappa):>6}"
                    if adjudicated
                    else ""
                )
                + f"  {' '.join(a.flags) + (' (paused)' if a.paused else '')}"
            )
        self.stdout.write(f"{plural(len(assessors), 'assessor')}")
