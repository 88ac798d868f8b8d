"""simulate_budget: coverage and width of each method's interval against the human budget."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.wording import plural
from judging.hybrid.budget import DEFAULT_REPEATS, simulation_json
from judging.hybrid.cli import HybridCommand
from judging.hybrid.pair_estimate import pair_population_for
from judging.measures.hybrid.estimators import METHODS, EstimationError
from judging.measures.hybrid.pair_simulation import simulate_pairs
from judging.measures.hybrid.ranked import PAIR_METHODS, check_offered, is_ranked, parse_ranked
from judging.measures.hybrid.simulation import ACTIVE_FROM, SimulationResult, budget_simulate
from judging.measures.hybrid.two_stage import TWO_STAGE_METHODS, simulate_two_stage


class Command(HybridCommand):
    help = (
        "Take the human labels present as the full truth (the units with human and machine values for "
        "every run), draw --repeats human samples of each budget, and report per budget and method the "
        "share of intervals that held the true score (coverage, the mean over runs), the worst run's "
        "coverage, the Monte Carlo error of the coverage, the mean width, and the width relative to the "
        "human-only (classical) interval. The intervals are those estimate prints (--fpc too). The active "
        "method samples with the uncertainty strategy: probabilities from the disagreement of --confidence-judges, "
        "else proportional to the expected size of the human-machine correction (--active-from), with a "
        "floor; active_verdict says whether that design is narrower than uniform PPI++ at valid coverage, "
        "and suggests the uniform design where it is not. Budgets above the fully "
        "labelled units are left out and named; budgets below the sizes where coverage was shown to hold "
        "(30 units, 5 labels of the rarer answer) are warned about. With --unit pair --design stratified "
        "and P@k the budget counts human pairs, drawn within strata of the machine's grade, and "
        "the methods are classical, ppi++ and strat-ppi++ (below 30 drawn pairs in a run's top k: warned); "
        "with --design two-stage and nDCG@k, P@k or AP (AP: the default design, the only one offered), "
        "turns then pairs within them, classical and ppi++ over "
        "the drawn turns (below 20 drawn turns: warned; JSON draws: turns and mean pairs per budget). "
        '--format json: {"budgets": {"200": '
        '{"ppi++": {"coverage", "worst_run_coverage", "mc_error", "mean_width", "width_ratio", "warning"}, '
        '...}}, "warnings": {"10": "..."}}.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_table_arguments(parser)
        parser.add_argument("--budgets", type=int, nargs="+", required=True, metavar="N")
        parser.add_argument(
            "--repeats", type=int, default=DEFAULT_REPEATS, help="Samples per budget (default: %(default)s)."
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--methods", nargs="+", default=list(METHODS), metavar="METHOD")
        parser.add_argument("--confidence-judges", nargs="+", default=[], metavar="JUDGE")
        parser.add_argument(
            "--design",
            choices=["default", "stratified", "uniform", "two-stage"],
            default="default",
            help="With --unit pair and P@k: draw pairs within strata of the machine's grade "
            "(stratified, Neyman allocation from the human grades present) or uniformly, and report "
            "classical, ppi++ and strat-ppi++; two-stage (nDCG@k or P@k): turns, then pairs within each "
            "drawn turn, as sample_for_humans --design two-stage draws them, classical and ppi++ at the "
            "turn level. Default: the designs of the other methods, as before.",
        )
        parser.add_argument(
            "--active-from",
            choices=ACTIVE_FROM,
            default="machine",
            help="Without --confidence-judges, what predicts each unit's correction for the active method: "
            "the machine's own values (sqrt(yhat (1 - yhat))), or a uniform pilot of 30 units' "
            "|human - machine| by machine value. Default: %(default)s.",
        )
        self.add_method_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["unit"] == "pair" and is_ranked(options["measure"] or ""):
            self.handle_pairs(options)
            return
        alpha = self.check_alpha(options["alpha"])
        unknown = [m for m in options["methods"] if m not in METHODS]
        if unknown:
            raise CommandError(f"--methods must be among {', '.join(METHODS)}, not {', '.join(unknown)}")
        if options["repeats"] < 1:
            raise CommandError("--repeats must be at least 1")
        collection = self.get_collection(options["collection"])
        try:
            simulation = budget_simulate(
                table=self.table(collection, options),
                budgets=options["budgets"],
                repeats=options["repeats"],
                seed=options["seed"],
                alpha=alpha,
                confidence=[
                    self.table(collection, options, human=self.get_judge(n))
                    for n in options["confidence_judges"]
                ],
                methods=options["methods"],
                fpc=options["fpc"],
                active_from=options["active_from"],
            )
        except EstimationError as exc:
            raise CommandError(str(exc)) from None
        table, result = simulation.table, simulation.result
        data = simulation_json(simulation)
        active_verdict = simulation.active_verdict
        if options["format"] == "json":
            self.stdout.write(json.dumps(data, indent=2))
            return
        self.stdout.write(
            f"{plural(table.size, 'unit')} x {plural(len(table.runs), 'run')}, "
            f"{plural(result.repeats, 'repeat')} per budget, "
            f"{100 * (1 - alpha):g}% intervals{' with the finite-population correction' if result.fpc else ''}; "
            f"active sampling: {data['active_sampling']}\n"
        )
        if simulation.left_out:
            self.stdout.write(
                f"budgets above the {plural(table.size, 'fully labelled unit')} left out: "
                f"{', '.join(map(str, simulation.left_out))}\n"
            )
        if result.constant_runs:
            names = [table.runs[i] for i in result.constant_runs]
            self.stdout.write(
                f"{plural(len(names), 'run')} with the same value on every unit (nothing to estimate) left out of the "
                f"means: {', '.join(names)}\n"
            )
        self.write_table(result)
        if active_verdict is not None:
            self.stdout.write(f"{active_verdict.sentence}\n")

    def write_table(self, result: SimulationResult) -> None:
        self.stdout.write(
            f"{'budget':>6}  {'method':<9}  coverage  worst_run_coverage  mc_error  mean_width  width_ratio\n"
        )
        for budget, methods in result.budgets.items():
            for method, f in methods.items():
                self.stdout.write(
                    f"{budget:>6}  {method:<9}  {f.coverage:8.3f}  {f.worst_run_coverage:18.3f}  "
                    f"{f.mc_error:8.3f}  {f.mean_width:10.4f}  {f.width_ratio:11.3f}\n"
                )
        for budget, warning in result.warnings.items():
            self.stdout.write(f"warning: budget {budget}: {warning}\n")

    def handle_pairs(self, options: dict[str, Any]) -> None:
        """The pair design's simulation (`pair_simulation`): human pairs as the budget."""
        alpha = self.check_alpha(options["alpha"])
        asked = options["methods"]
        unknown = [m for m in asked if m not in PAIR_METHODS and m not in METHODS]
        if unknown:
            raise CommandError(f"--methods must be among {', '.join(PAIR_METHODS)}, not {', '.join(unknown)}")
        design = {"uniform": "uniform", "two-stage": "two-stage"}.get(options["design"], "stratified")
        if options["design"] == "default" and is_ranked(options["measure"] or ""):
            # AP is offered from the two-stage design only: the default runs that one for it.
            design = "two-stage" if parse_ranked(options["measure"]).name == "AP" else design
        offered = TWO_STAGE_METHODS if design == "two-stage" else PAIR_METHODS
        chosen = [m for m in asked if m in offered]
        methods = list(offered) if asked == list(METHODS) or not chosen else chosen
        if design == "two-stage" and options["fpc"]:
            raise CommandError(
                "--fpc is not an option of the two-stage design: its interval always has the correction "
                "(docs/statistics.md)"
            )
        collection = self.get_collection(options["collection"])
        try:
            population = pair_population_for(
                collection=collection,
                human=[self.get_judge(name) for name in options["human_judge"]],
                machine=self.get_judge(options["machine_judge"]),
            ).complete()
            usable = sorted({b for b in options["budgets"] if 2 <= b <= population.size})
            left_out = sorted({b for b in options["budgets"] if b > population.size})
            if not usable:
                raise EstimationError(
                    f"budgets must lie between 2 and the {plural(population.size, 'human-graded pair')}"
                )
            measure = parse_ranked(options["measure"])
            check_offered(measure, two_stage=design == "two-stage")
            shared: dict[str, Any] = {
                "population": population,
                "measure": measure,
                "budgets": usable,
                "repeats": options["repeats"],
                "seed": options["seed"],
                "alpha": alpha,
                "methods": methods,
            }
            result = (
                simulate_two_stage(**shared)
                if design == "two-stage"
                else simulate_pairs(**shared, design=design)
            )
        except EstimationError as exc:
            raise CommandError(str(exc)) from None
        data = result.as_json()
        data["design"] = design
        data["left_out_budgets"] = left_out
        if options["format"] == "json":
            self.stdout.write(json.dumps(data, indent=2))
            return
        self.stdout.write(
            f"{plural(population.size, 'human-graded pair')} in {plural(len(population.turns), 'turn')} x "
            f"{plural(len(population.runs), 'run')}, {plural(result.repeats, 'repeat')} per budget, "
            f"{100 * (1 - alpha):g}% intervals; design: {design} pairs\n"
        )
        if left_out:
            self.stdout.write(
                f"budgets above the human-graded pairs left out: {', '.join(map(str, left_out))}\n"
            )
        for budget, drew in result.draws.items():
            self.stdout.write(
                f"budget {budget}: {plural(int(drew['turns']), 'turn')} drawn, a mean of "
                f"{plural(round(drew['pairs']), 'pair')} a draw\n"
            )
        self.write_table(result)
