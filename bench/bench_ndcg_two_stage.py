"""The two-stage pair design's nDCG@5 (and P(rel=2)@5) on the iKAT 2024 qrels, against whole turns.

Population: the public iKAT 2024 qrels (20,575 pairs, 116 turns; ASSAY_SHARED_DATA or ../shared/data) with
the tests' five synthetic runs and noisy, miscalibrated machine judge (tests/judging/pair_data.py). For
each budget of human pairs, `DRAWS` two-stage samples (300 for the alternatives) (`two_stage.two_stage_draw`: uniform turns, a census
of each drawn turn's pairs within some run's top 5, one or more of its other pairs per machine grade) give
every run's estimate by `two_stage` (the code `estimate` runs); printed: bias per run, worst-run and mean
coverage of the 95% interval, mean width, and the mean width of whole-turn `ppi++` (`simulation.simulate`)
with as many human pairs (budget / 177 pairs per turn). Then the trade-off between turns and pairs per
turn at each budget. Pure numpy, a minute or two. Not part of the test suite.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402
import numpy as np  # noqa: E402

django.setup()

from judging.measures.hybrid.ranked import parse_ranked, true_scores, turn_scores  # noqa: E402
from judging.measures.hybrid.simulation import simulate  # noqa: E402
from judging.measures.hybrid.two_stage import (  # noqa: E402
    drawn_turn_scores,
    turn_level,
    turns_for,
    two_stage_draw,
    two_stage_intervals,
)
from tests.judging.pair_data import IKAT_QRELS, population, read_qrels  # noqa: E402

BUDGETS, DRAWS, SEED = (1000, 2000), 1000, 0


def main() -> None:
    if not IKAT_QRELS.exists():
        print(f"iKAT 2024 qrels not found at {IKAT_QRELS} (set ASSAY_SHARED_DATA)")
        return
    pop = population(read_qrels(IKAT_QRELS), seed=1)
    per_pair = pop.size / len(pop.turns)
    for text in ("nDCG@5", "P(rel=2)@5"):
        measure = parse_ranked(text)
        truth = true_scores(pop, measure, pop.human)
        machine = turn_scores(pop, measure, pop.machine)
        whole_turns = sorted({round(b / per_pair) for b in BUDGETS})
        whole = simulate(
            truth=turn_scores(pop, measure, pop.human),
            machine=machine,
            budgets=whole_turns,
            repeats=1000,
            seed=1,
        )
        print(f"\n{text}: true {np.round(truth, 3)}")
        for budget in BUDGETS:
            t = round(budget / per_pair)
            ref = whole.budgets[t]["ppi++"]
            print(
                f"  whole-turn ppi++, {t} turns ({budget} pairs): width {ref.mean_width:.3f}, worst-run "
                f"coverage {ref.worst_run_coverage:.3f}"
            )
            base = turns_for(pop, measure, budget)
            for turns in sorted({base, *(round(base * f) for f in (0.6, 0.8))}):
                _row(
                    pop,
                    measure,
                    truth,
                    machine,
                    budget,
                    turns,
                    ref.mean_width,
                    DRAWS if turns == base else 300,
                )


def _row(pop, measure, truth, machine, budget: int, turns: int, whole: float, draws: int) -> None:  # noqa: ANN001
    rng = np.random.default_rng(SEED)
    est, lo, hi, cost = [], [], [], []
    for _ in range(draws):
        draw = two_stage_draw(population=pop, measure=measure, budget=budget, rng=rng, turns=turns)
        human, _empty = drawn_turn_scores(pop, measure, draw.chosen, draw.turns)
        got = turn_level(
            human=human, machine_drawn=machine[:, draw.turns], machine_all=machine, method="ppi++"
        )
        e, a, b = two_stage_intervals(got=got, alpha=0.05)
        est.append(e)
        lo.append(a)
        hi.append(b)
        cost.append(len(draw.chosen))
    est, lo, hi = (np.array(v).T for v in (est, lo, hi))
    covered = ((lo <= truth[:, None]) & (truth[:, None] <= hi)).mean(1)
    width = (hi - lo).mean()
    bias = np.round(est.mean(1) - truth, 3) + 0.0
    print(
        f"    two-stage, {turns} turns, {np.mean(cost):.0f} pairs: bias {bias}, sd {est.std(1).max():.3f}, "
        f"coverage worst {covered.min():.3f} mean {covered.mean():.3f}, width {width:.3f} "
        f"({whole / width:.1f}x narrower than whole turns)"
    )


if __name__ == "__main__":
    main()
