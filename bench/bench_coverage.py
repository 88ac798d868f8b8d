"""Worst-run coverage and width of every design x measure x budget the estimate and budget pages offer,
and whether the tool warns there.

Truth: the public iKAT 2024 NIST qrels (20,575 pairs, 116 turns; ASSAY_SHARED_DATA or ../shared/data).
Machine: drawn from a confusion matrix P(machine grade | human grade) shaped like GPT-4's on these qrels
(over-grades 0 and 1, squeezes 3 and 4). Runs: the tests' five synthetic runs of growing quality
(tests/judging/pair_data.py), a near-perfect run (the human grades' order), a near-zero run (only
unpooled passages but one) and two close runs (same quality, other noise).

For each cell, `REPEATS` samples (`simulation.simulate` for whole turns, `pair_simulation.simulate_pairs`
for stratified and uniform pairs, `two_stage.simulate_two_stage` for two-stage pairs: the code `estimate`
runs) give the worst run's coverage of the 95% interval and the mean width; then `CHECKS` samples of the
cell are drawn and the tool's own warning (`coverage.turn_coverage` / `coverage.pair_coverage`, as
`estimate` calls it) is run on each: "warned" is the share of them that warn. A cell passes when its
worst-run coverage is at least 0.90 or the tool warns on at least half of its samples. Pure numpy; about 2 minutes
on one core. Not part of the test suite.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402
import numpy as np  # noqa: E402

django.setup()

from judging.measures.hybrid.active import correction_from_machine  # noqa: E402
from judging.measures.hybrid.coverage import COVERAGE_FLOOR, pair_coverage, turn_coverage  # noqa: E402
from judging.measures.hybrid.pair_simulation import allocation_for, draw_block, simulate_pairs  # noqa: E402
from judging.measures.hybrid.pairs import PairPopulation, pair_population  # noqa: E402
from judging.measures.hybrid.ranked import parse_ranked, turn_scores  # noqa: E402
from judging.measures.hybrid.sampling import inclusion_probabilities  # noqa: E402
from judging.measures.hybrid.simulation import simulate  # noqa: E402
from judging.measures.hybrid.table import UnitTable  # noqa: E402
from judging.measures.hybrid.two_stage import simulate_two_stage, two_stage_draw  # noqa: E402
from tests.judging.pair_data import IKAT_QRELS, read_qrels, runs_for  # noqa: E402

REPEATS, PAIR_REPEATS, CHECKS, SEED = 400, 100, 10, 0
TURN_BUDGETS = (10, 20, 30, 40, 60)
PAIR_BUDGETS = (200, 500, 1000)
TWO_STAGE_BUDGETS = (500, 1000, 2000)
# P(machine grade | human grade), rows human 0..4.
CONFUSION = np.array(
    [
        [0.62, 0.25, 0.10, 0.03, 0.00],
        [0.25, 0.40, 0.28, 0.07, 0.00],
        [0.08, 0.22, 0.45, 0.22, 0.03],
        [0.03, 0.10, 0.32, 0.45, 0.10],
        [0.02, 0.05, 0.23, 0.45, 0.25],
    ]
)


def build() -> PairPopulation:
    human = read_qrels(IKAT_QRELS)
    rng = np.random.default_rng(SEED)
    machine = {
        t: {d: int(rng.choice(5, p=CONFUSION[min(g, 4)])) for d, g in sorted(docs.items())}
        for t, docs in sorted(human.items())
    }
    runs = runs_for(human, seed=SEED + 1, runs=5)
    close = runs_for(human, seed=SEED + 2, runs=4)
    runs["close-a"] = runs["run2"]
    runs["close-b"] = close["run2"]
    runs["near-perfect"] = {
        t: {d: float(100 - i) for i, d in enumerate(sorted(docs, key=lambda d: (-docs[d], d))[:30])}
        for t, docs in human.items()
    }
    runs["near-zero"] = {
        t: {f"unpooled-{t}-{i}": float(30 - i) for i in range(29)}
        | {min(docs, key=lambda d: (docs[d], d)): 1.0}
        for t, docs in human.items()
    }
    return pair_population(machine=machine, human=human, rankings=runs)


def cell(
    design: str, measure: str, method: str, budget: int, worst: float, width: float, warned: float
) -> str:
    ok = worst >= COVERAGE_FLOOR or warned >= 0.5
    mark = "ok" if worst >= COVERAGE_FLOOR else ("warned" if warned >= 0.5 else "UNWARNED")
    return (
        f"| {design} | {measure} | {method} | {budget} | {worst:.3f} | {width:.3f} | "
        f"{100 * warned:.0f}% | {mark} |" + ("" if ok else " <-")
    )


def turn_cells(pop: PairPopulation, text: str) -> list[str]:
    measure = parse_ranked(text)
    truth = turn_scores(pop, measure, pop.human)
    machine = turn_scores(pop, measure, pop.machine)
    rows = []
    rng = np.random.default_rng(SEED)
    uncertainty = correction_from_machine(machine)
    for fpc in (False, True):
        for method in ("classical", "ppi++", "active"):
            if fpc and method == "classical":
                continue
            result = simulate(
                truth=truth,
                machine=machine,
                budgets=TURN_BUDGETS,
                repeats=REPEATS,
                seed=SEED,
                methods=[method],
                fpc=fpc,
                uncertainty=uncertainty,
            )
            for b in TURN_BUDGETS:
                f = result.budgets[b][method]
                warned = 0
                for _ in range(CHECKS):
                    if method == "active":
                        pi = inclusion_probabilities(uncertainty=uncertainty, budget=b)
                        drawn = rng.random(truth.shape[1]) < pi
                    else:
                        pi = None
                        drawn = np.zeros(truth.shape[1], dtype=bool)
                        drawn[rng.choice(truth.shape[1], size=b, replace=False)] = True
                    human = np.where(drawn[None, :], truth, np.nan)
                    table = UnitTable(
                        "relevance", text, "turn", list(pop.turns), list(pop.runs), machine, human
                    )
                    got = turn_coverage(
                        table=table, drawn=drawn, pi=pi, method=method, alpha=0.05, fpc=fpc, repeats=200
                    )
                    warned += bool(got and got.warned)
                design = "whole turns" + (" --fpc" if fpc else "")
                rows.append(
                    cell(design, text, method, b, f.worst_run_coverage, f.mean_width, warned / CHECKS)
                )
    return rows


def pair_cells(pop: PairPopulation, text: str) -> list[str]:
    measure = parse_ranked(text)
    rows = []
    rng = np.random.default_rng(SEED)
    for design, method in (("stratified", "strat-ppi++"), ("uniform", "ppi++")):
        result = simulate_pairs(
            population=pop,
            measure=measure,
            budgets=PAIR_BUDGETS,
            repeats=PAIR_REPEATS,
            seed=SEED,
            design=design,
            methods=[method],
        )
        for b in PAIR_BUDGETS:
            f = result.budgets[b][method]
            strata, counts = allocation_for(pop, measure=measure, budget=b, design=design)
            warned = 0
            for _ in range(CHECKS):
                drawn = np.sort(draw_block(rng, strata, counts, 1)[0])
                seen = np.full(pop.size, np.nan)
                seen[drawn] = pop.human[drawn]
                sample = PairPopulation(pop.keys, pop.turns, pop.turn, pop.machine, seen, pop.runs, pop.rank)
                got = pair_coverage(
                    population=sample, measure=measure, drawn=drawn, method=method, alpha=0.05, design=design
                )
                warned += bool(got and got.warned)
            rows.append(
                cell(f"{design} pairs", text, method, b, f.worst_run_coverage, f.mean_width, warned / CHECKS)
            )
    return rows


def two_stage_cells(pop: PairPopulation, text: str) -> list[str]:
    measure = parse_ranked(text)
    rows = []
    rng = np.random.default_rng(SEED)
    result = simulate_two_stage(
        population=pop,
        measure=measure,
        budgets=TWO_STAGE_BUDGETS,
        repeats=PAIR_REPEATS,
        seed=SEED,
        methods=["ppi++"],
    )
    for b in TWO_STAGE_BUDGETS:
        f = result.budgets[b]["ppi++"]
        warned = 0
        for _ in range(CHECKS):
            drawn = np.sort(two_stage_draw(population=pop, measure=measure, budget=b, rng=rng).chosen)
            seen = np.full(pop.size, np.nan)
            seen[drawn] = pop.human[drawn]
            sample = PairPopulation(pop.keys, pop.turns, pop.turn, pop.machine, seen, pop.runs, pop.rank)
            got = pair_coverage(
                population=sample,
                measure=measure,
                drawn=drawn,
                method="ppi++",
                alpha=0.05,
                design="two-stage",
                budget=b,
            )
            warned += bool(got and got.warned)
        rows.append(
            cell("two-stage pairs", text, "ppi++", b, f.worst_run_coverage, f.mean_width, warned / CHECKS)
        )
    return rows


def main() -> None:
    if not IKAT_QRELS.exists():
        print(f"iKAT 2024 qrels not found at {IKAT_QRELS} (set ASSAY_SHARED_DATA)")
        return
    start = time.monotonic()
    pop = build()
    print(
        f"{pop.size} pairs, {len(pop.turns)} turns, {len(pop.runs)} runs; {REPEATS} samples per whole-turn cell, "
        f"{PAIR_REPEATS} per pair cell, the tool's warning checked on {CHECKS} samples of each"
    )
    print("| design | measure | method | budget | worst-run coverage | mean width | warned | cell |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [*turn_cells(pop, "nDCG@5"), *turn_cells(pop, "P(rel=2)@10")]
    rows += [*pair_cells(pop, "P(rel=2)@10"), *two_stage_cells(pop, "nDCG@5")]
    for row in rows:
        print(row, flush=True)
    bad = sum(r.endswith("<-") for r in rows)
    print(f"{len(rows)} cells, {bad} under {COVERAGE_FLOOR} and unwarned; {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
