"""plan_budget: from a pilot sample, how many human labels reach a target width or settle run pairs."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.wording import plural
from judging.hybrid.cli import HybridCommand
from judging.hybrid.estimators import EstimationError
from judging.hybrid.planning import plan_budget


class Command(HybridCommand):
    help = (
        "From the human labels of a pilot sample (--sample, or every human-labelled unit), the PPI++ "
        "labels needed in all for every run's interval to be at most --target-width wide, and for "
        "--settle-share of the run pairs to be settled (their difference interval excluding 0), assuming "
        "the pilot's variances and differences hold, with the Student t intervals estimate prints (--fpc: "
        "with the finite-population correction). Warns where the pilot or the plan is below 30 units, "
        "where the intervals' coverage was not shown to hold. --format json gives the plan per run and "
        '"warnings".'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_table_arguments(parser)
        parser.add_argument("--sample", help="The pilot sample (sample_for_humans --name).")
        parser.add_argument("--target-width", type=float, help="Wanted width of every run's interval.")
        parser.add_argument(
            "--settle-share", type=float, help="Wanted share of run pairs settled, in (0, 1]."
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
                sample=sample,
                target_width=options["target_width"],
                settle_share=options["settle_share"],
                alpha=alpha,
                fpc=options["fpc"],
            )
        except EstimationError as exc:
            raise CommandError(str(exc)) from None
        data = plan.as_json()
        if options["format"] == "json":
            self.stdout.write(json.dumps(data, indent=2))
            return
        self.stdout.write(f"pilot: {plural(data['n_pilot'], f'labelled {table.unit}')} of {data['units']}\n")
        if data["width_plan"] is not None:
            self.stdout.write(f"{data['width_plan']}\n")
            for run, p in data["runs"].items():
                needs = p["labels_needed"]
                self.stdout.write(
                    f"  {run}: width now {p['width_now']:.4f}, "
                    + (
                        f"needs {plural(round(needs), 'label')}\n"
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
                f"{plural(len(runs), 'run')} with the same value on every unit (nothing to estimate) left out: "
                f"{', '.join(runs)}\n"
            )
