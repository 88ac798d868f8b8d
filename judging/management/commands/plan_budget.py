"""plan_budget: from a pilot sample, how many human-labelled units reach a target width or settle run pairs."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.wording import plural
from judging.hybrid.cli import HybridCommand
from judging.hybrid.estimate import sample_draw
from judging.measures.hybrid.estimators import EstimationError
from judging.measures.hybrid.planning import ASSURANCE, plan_budget


class Command(HybridCommand):
    help = (
        "From the human labels of a pilot sample (--sample, or every human-labelled unit), the smallest "
        "budget, in the table's own unit (turns, or pairs with --unit pair), at which every run's PPI++ "
        "interval, as estimate prints it (--fpc: with the finite-population correction), is at most "
        "--target-width wide in at least --assurance of samples (default 0.8; found by resampling the "
        "pilot), and the budget after which --settle-share of the run pairs is settled, if the pilot's "
        "differences hold. Never below 30 units (where the intervals' coverage was shown to hold), or every "
        "unit when there are fewer; says how far off the budget may be when the pilot is small. "
        '--format json: {"unit", "assurance", "budget_for_width", "budget_for_settling", '
        '"pilot_variance_range", "runs": {run: {"needed", "more_needed", "width_now"}}, "warnings"}.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_table_arguments(parser)
        parser.add_argument("--sample", help="The pilot sample (sample_for_humans --name).")
        parser.add_argument("--target-width", type=float, help="Wanted width of every run's interval.")
        parser.add_argument(
            "--settle-share", type=float, help="Wanted share of run pairs settled, in (0, 1]."
        )
        parser.add_argument(
            "--assurance",
            type=float,
            default=ASSURANCE,
            help="Share of samples in which the budget's interval must meet --target-width (default: %(default)s).",
        )
        self.add_method_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        alpha = self.check_alpha(options["alpha"])
        collection = self.get_collection(options["collection"])
        table = self.table(collection, options)
        sample = self.sample(collection, options["sample"])
        try:
            plan = plan_budget(
                table=table,
                drawn=sample_draw(table=table, sample=sample).drawn,
                target_width=options["target_width"],
                settle_share=options["settle_share"],
                alpha=alpha,
                fpc=options["fpc"],
                assurance=options["assurance"],
            )
        except EstimationError as exc:
            raise CommandError(str(exc)) from None
        data = plan.as_json()
        if options["format"] == "json":
            self.stdout.write(json.dumps(data, indent=2))
            return
        unit = table.unit
        self.stdout.write(f"pilot: {plural(data['n_pilot'], f'labelled {unit}')} of {data['units']}\n")
        if data["width_plan"] is not None:
            self.stdout.write(f"{data['width_plan']}\n")
            for run, p in data["runs"].items():
                needs = p["needed"]
                self.stdout.write(
                    f"  {run}: width now {p['width_now']:.4f}, "
                    + (
                        f"needs {plural(round(needs), unit)}\n"
                        if needs is not None
                        else "no budget reaches the width\n"
                    )
                )
        if data["settling_plan"] is not None:
            self.stdout.write(f"{data['settling_plan']}\n")
        for warning in data["warnings"]:
            self.stdout.write(f"warning: {warning}\n")
        if data["nothing_to_estimate"]:
            runs = data["nothing_to_estimate"]
            self.stdout.write(
                f"{plural(len(runs), 'run')} with the same value on every {unit} (nothing to estimate) left out: "
                f"{', '.join(runs)}\n"
            )
