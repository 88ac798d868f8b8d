"""`run_report`: each run's validation report and, per run and judge, judged@k and the unjudged pairs."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.collection.checks import run_report_get
from annotation.commands import CollectionCommand
from annotation.models import Run
from judging.quality.runs.forms import MAX_DEPTH
from judging.quality.runs.selectors import (
    cutoffs,
    judged_at_k,
    judged_csv,
    pool_depth,
    relevance_judges,
)


class Command(CollectionCommand):
    help = (
        "Run reports of a collection: per run and judge, judged@5, @10, @20 and @ the pool depth (the share "
        "of a run's top k passages the judge graded, averaged over the topics it graded, as ir_measures' "
        "Judged@k) and the pairs within the pool depth left unjudged. CSV (the columns of the page's "
        "download) or JSON, which adds each run's validation report of its import."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--judge", help="Only this judge (default: every judge with relevance grades).")
        parser.add_argument(
            "--depth", type=int, help="Pool depth to count unjudged pairs within (default: deepest pool's)."
        )
        parser.add_argument("--format", choices=["csv", "json"], default="csv")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = self.get_collection(options["collection"])
        depth = options["depth"] or pool_depth(collection=collection)
        if not 1 <= depth <= MAX_DEPTH:
            raise CommandError(f"--depth must be between 1 and {MAX_DEPTH}")
        judges = relevance_judges(collection=collection)
        if options["judge"]:
            judges = [judge for judge in judges if judge.name == options["judge"]]
            if not judges:
                self.get_judge(options["judge"])  # an unknown name is refused with the known ones
                raise CommandError(f"judge {options['judge']!r} has no relevance grades in {collection.name}")
        rows = [
            row
            for judge in judges
            for row in judged_at_k(
                collection=collection, judge_id=judge.id, judge_name=judge.name, depth=depth
            )
        ]
        if options["format"] == "csv":
            self.stdout.write(judged_csv(rows), ending="")
            return
        runs = Run.objects.filter(collection=collection).order_by("name")
        report = {
            "collection": collection.name,
            "depth": depth,
            "cutoffs": cutoffs(depth),
            "runs": {run.name: run_report_get(run=run) for run in runs},
            "judged": [
                {
                    "run": row.run,
                    "judge": row.judge,
                    "topics": row.topics,
                    "topics_judged": row.topics_judged,
                    "judged_at": {str(k): share for k, share in row.judged.items()},
                    "ranked_within_depth": row.ranked_within_depth,
                    "unjudged_within_depth": row.unjudged_within_depth,
                }
                for row in rows
            ],
        }
        self.stdout.write(json.dumps(report, indent=2))
