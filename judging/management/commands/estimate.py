"""estimate: each run's score from a few human labels plus machine labels on every unit, with intervals."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from judging.hybrid.cli import HybridCommand
from judging.hybrid.estimate import hybrid_estimate
from judging.hybrid.pair_estimate import pair_hybrid_estimate, pair_population_for
from judging.measures.hybrid.estimate import estimate_text
from judging.measures.hybrid.estimators import METHODS, EstimationError
from judging.measures.hybrid.ranked import is_ranked


class Command(HybridCommand):
    help = (
        "Estimate each run's measure (the mean over turns of its per-turn value; for relevant_share, the "
        "share of pooled pairs graded at least --rel-threshold, as one entry named 'pool') from the human "
        "judge's labels on a sample and the machine judge's labels on every unit, with confidence intervals "
        "(classical: humans only; ppi; ppi++: power-tuned; active: inverse-probability weighted), the "
        "differences between runs, and the ranking with the pairs whose order is settled (under Holm's "
        "control of the family-wise error at --alpha), in every design, with a one-sided bound on Kendall's "
        "tau-b of the hybrid ranking with the full-judgment ranking (from the settled pairs) and the tau-b "
        "with the human-only ranking on the sample. Name the sample "
        "drawn by sample_for_humans with --sample; without it the human labels are treated as a uniform "
        'random sample, which the output says. --format json: {"method", "alpha", "runs": {run: '
        '{"estimate", "ci", "n_human", "n_machine", "effective_n", "interval", "warning"}}, "pairs": [...], '
        '"ranking": [...], "multiple_comparisons": "holm", "rank_agreement": {"kendall_tau", "point", '
        '"estimand", "ci", "interval"}, "warnings": [...]}. Intervals are Student t intervals, Wilson intervals for yes/no '
        "labels, clipped to the measure's range; a warning names every run with fewer than 30 human-labelled "
        "units or 5 labels of the rarer answer, below which their coverage was not shown to hold. With "
        "--unit pair and P@k or AP, each run's score comes from a pair sample (sample_for_humans "
        "--unit pair): methods classical, ppi++ and strat-ppi++ (AP: classical, inferred AP). nDCG@k needs "
        "a two-stage pair sample (sample_for_humans --design two-stage), estimated with classical or ppi++ "
        "over the drawn turns."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_table_arguments(parser)
        parser.add_argument(
            "--method",
            default="ppi++",
            help=f"One of {', '.join(METHODS)} (default: ppi++); pair samples: classical, ppi++, strat-ppi++.",
        )
        parser.add_argument("--sample", help="The sample (sample_for_humans --name) the human labels answer.")
        parser.add_argument("--no-pairs", action="store_true", help="Skip the pairwise differences.")
        self.add_method_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["unit"] == "pair" and is_ranked(options["measure"] or ""):
            self.handle_pairs(options)
            return
        if options["method"] not in METHODS:
            raise CommandError(f"--method must be one of {', '.join(METHODS)}, not {options['method']!r}")
        alpha = self.check_alpha(options["alpha"])
        collection = self.get_collection(options["collection"])
        table = self.table(collection, options)
        sample = self.sample(collection, options["sample"])
        try:
            result = hybrid_estimate(
                table=table,
                method=options["method"],
                alpha=alpha,
                sample=sample,
                pairs=not options["no_pairs"],
                fpc=options["fpc"],
            )
        except EstimationError as exc:
            raise CommandError(str(exc)) from None
        if not result.runs:
            raise CommandError(
                "no run has an interval: " + "; ".join(f"{r}: {why}" for r, why in result.skipped.items())
            )
        if options["format"] == "json":
            self.stdout.write(json.dumps(result.as_json(), indent=2))
        else:
            self.stdout.write(estimate_text(result), ending="")

    def handle_pairs(self, options: dict[str, Any]) -> None:
        """nDCG@k, P@k or AP per run from a pair sample (`pair_estimate`)."""
        if options["fpc"]:
            # Said rather than ignored: P@k's stratified variance always has it, the two-stage interval has
            # it for P@k only (docs/statistics.md); the JSON's "fpc" says which applied.
            raise CommandError(
                "--fpc is not an option for a pair sample: P@k from a stratified or uniform pair sample "
                "always has the finite-population correction, the two-stage design for P@k only"
            )
        alpha = self.check_alpha(options["alpha"])
        collection = self.get_collection(options["collection"])
        try:
            population = pair_population_for(
                collection=collection,
                human=[self.get_judge(name) for name in options["human_judge"]],
                machine=self.get_judge(options["machine_judge"]),
            )
            result = pair_hybrid_estimate(
                population=population,
                measure=options["measure"],
                method=options["method"],
                alpha=alpha,
                sample=self.sample(collection, options["sample"]),
            )
        except EstimationError as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            self.stdout.write(json.dumps(result.as_json(), indent=2))
        else:
            self.stdout.write(estimate_text(result), ending="")
