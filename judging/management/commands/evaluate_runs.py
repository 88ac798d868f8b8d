"""evaluate_runs: the iKAT passage-ranking measures of runs against one judge, as a table or JSON."""

from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser
from django.template.defaultfilters import pluralize

from annotation.commands import CollectionCommand
from annotation.models import Run
from core.names import known_names
from core.wording import plural
from judging.measures.ir import EvaluationError, evaluation_table
from judging.scores.relevance import DEFAULT_REL_THRESHOLD, runs_evaluate


class Command(CollectionCommand):
    help = (
        "Evaluate runs against a judge's relevance labels with ir_measures: nDCG@5 (primary), P@20, R@20, "
        "R@1000 and MAP with a binary relevance threshold (--rel-threshold, default 2: grades >= 2 count as "
        "relevant), and Judged@10. Only turns the judge assessed are evaluated; a run lacking one of them "
        "scores 0 on it (as trec_eval -c). --format json prints "
        '{"runs": {run: {measure: value}}, "per_turn": {run: {turn: {measure: value}}}}.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--judge", required=True, help="Name of the judge whose relevance labels are the qrels."
        )
        parser.add_argument(
            "--runs", nargs="+", metavar="RUN", help="Run names to evaluate (default: every run)."
        )
        parser.add_argument(
            "--rel-threshold",
            type=int,
            default=DEFAULT_REL_THRESHOLD,
            help="Lowest grade (1-4) the binary measures P, R and AP count as relevant (default: %(default)s).",
        )
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument(
            "--per-turn",
            action="store_true",
            help="With --format text, also print a per-turn table for each run.",
        )

    def handle(self, *args, collection, judge, runs, rel_threshold, format, per_turn, **options):
        target = self.get_collection(collection)
        selected = None
        if runs:
            found = {run.name: run for run in Run.objects.filter(collection=target, name__in=runs)}
            unknown = [name for name in runs if name not in found]
            if unknown:
                known = known_names(target.runs.all(), kind="run")
                raise CommandError(f"no run named {', '.join(unknown)} in collection {target.name}; {known}")
            selected = list(found.values())
        try:
            evaluation = runs_evaluate(
                collection=target, judge=self.get_judge(judge), runs=selected, rel_threshold=rel_threshold
            )
        except EvaluationError as exc:
            raise CommandError(str(exc)) from None
        if format == "json":
            self.stdout.write(json.dumps(evaluation.as_json(), indent=2))
            return
        self.stdout.write(
            f"{target.name}: {len(evaluation.runs)} run{pluralize(len(evaluation.runs))} on the "
            f"{len(evaluation.turns)} turn{pluralize(len(evaluation.turns))} judged by "
            f"{evaluation.judge}; relevant means grade >= {evaluation.rel_threshold}\n"
        )
        self.stdout.write(evaluation_table(evaluation), ending="")
        for name in evaluation.ranked_runs():
            if evaluation.missing[name]:
                self.stderr.write(
                    f"{name}: no ranking for {plural(len(evaluation.missing[name]), 'judged turn')}, scored 0 there"
                )
        if per_turn:
            for name in evaluation.ranked_runs():
                self.stdout.write(f"\n{name}\n")
                self.stdout.write(evaluation_table(evaluation, run=name), ending="")
