"""What the hybrid commands share: the arguments naming a measure under two judges, and their checks."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.models import Collection, Judge
from judging.hybrid.services import DEFAULT_MEASURE, HybridError, human_sample_get
from judging.hybrid.units import TASKS, UNITS, UnitsError, unit_table
from judging.measures.hybrid.table import UnitTable
from judging.models import HumanSample


class HybridCommand(CollectionCommand):
    """A command over one collection, task and measure, with a human and a machine judge."""

    def add_table_arguments(self, parser: CommandParser, *, human: bool = True) -> None:
        super().add_arguments(parser)
        parser.add_argument("--task", required=True, choices=TASKS)
        parser.add_argument(
            "--measure",
            help="relevance: an ir_measures measure (nDCG@5, P(rel=2)@20, ...) or relevant_share; support: "
            "weighted_precision or weighted_recall; ntr: ntr_recall; nugget-assignment: strict_vital_score, "
            "strict_all_score, vital_score or all_score (default per task: "
            + ", ".join(f"{t} {m}" for t, m in DEFAULT_MEASURE.items())
            + ")",
        )
        parser.add_argument(
            "--unit",
            choices=UNITS,
            default="turn",
            help="The sampling unit: a whole turn (every task), or a (turn, passage) pair (relevance "
            "relevant_share only). Default: %(default)s.",
        )
        parser.add_argument(
            "--rel-threshold",
            type=int,
            default=2,
            help="relevant_share: the lowest grade counted relevant (default: %(default)s).",
        )
        if human:
            parser.add_argument(
                "--human-judge",
                required=True,
                action="append",
                metavar="JUDGE",
                help="The judge whose labels are the truth. Give it once per assessor when several shared "
                "out the sample: their values are merged unit by unit (the mean where two labelled the "
                "same unit).",
            )
        parser.add_argument("--machine-judge", required=True, help="The judge that labelled every unit.")
        parser.add_argument("--gold-judge", help="ntr: the judge of the gold nuggets.")

    def add_method_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--fpc",
            action="store_true",
            help="Design-based intervals with the finite-population correction: for the mean over exactly "
            "the machine-labelled units, narrower when the sample is a large share of them (valid for a "
            "uniform sample without replacement or a stored sample). Default: the units are draws from an "
            "infinite population, which is conservative then.",
        )
        parser.add_argument(
            "--alpha", type=float, default=0.05, help="Error rate: 0.05 gives 95%% intervals (the default)."
        )
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def check_alpha(self, alpha: float) -> float:
        if not 0 < alpha < 1:
            raise CommandError(f"--alpha must lie strictly between 0 and 1, not {alpha}")
        return alpha

    def table(
        self, collection: Collection, options: dict[str, Any], *, human: Judge | None = None
    ) -> UnitTable:
        task = options["task"]
        measure = options["measure"] or DEFAULT_MEASURE[task]
        gold = self.get_judge(options["gold_judge"]) if options.get("gold_judge") else None
        try:
            return unit_table(
                collection=collection,
                task=task,
                measure=measure,
                human=human or [self.get_judge(name) for name in options["human_judge"]],
                machine=self.get_judge(options["machine_judge"]),
                unit=options["unit"],
                rel_threshold=options["rel_threshold"],
                gold=gold,
            )
        except UnitsError as exc:
            raise CommandError(str(exc)) from None

    def sample(self, collection: Collection, name: str | None) -> HumanSample | None:
        if not name:
            return None
        try:
            return human_sample_get(collection=collection, name=name)
        except HybridError as exc:
            raise CommandError(str(exc)) from None
