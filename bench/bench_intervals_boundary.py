"""Two-stage intervals at the boundary, and AP from a two-stage sample, on the iKAT 2024 qrels.

Population: the public iKAT 2024 qrels (20,575 pairs, 116 turns; ASSAY_SHARED_DATA or ../shared/data) as
the truth, the tests' noisy, miscalibrated machine judge (tests/judging/pair_data.py), the tests' five
synthetic runs plus a near-perfect run (ranks by the human grade with a little noise) and a near-zero one
(ranks the least relevant first). For each measure and number of drawn turns, `DRAWS` two-stage samples
(`two_stage.two_stage_draw`: uniform turns, a census of each drawn turn's pairs within some run's depth,
one or more of its other pairs per machine grade) give every run's ppi++ estimate by `two_stage` (the code
`estimate` runs) and four intervals on the same draws (`two_stage.INTERVALS`): t (the old one, no
finite-population correction), t-fpc, betting (Waudby-Smith and Ramdas, without replacement) and
boundary (t-fpc, with the hull of betting for a run whose drawn turn scores sit at 0 or 1, the shipped
one). Printed per interval: coverage of the 95% interval per run, worst run, mean width, and the width
relative to the old interval in the same invocation. Pure numpy, a few minutes. Not part of the test suite.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from judging.measures.hybrid.pairs import PairPopulation, pair_population  # noqa: E402
from judging.measures.hybrid.ranked import parse_ranked, true_scores, turn_scores  # noqa: E402
from judging.measures.hybrid.two_stage import (  # noqa: E402
    INTERVALS,
    drawn_turn_scores,
    frame_for,
    turn_level,
    two_stage_draw,
    two_stage_intervals,
)
from tests.judging.pair_data import IKAT_QRELS, machine_judge, read_qrels, runs_for  # noqa: E402

TURNS = (10, 20, 30, 43, 60, 87)
MEASURES = ("nDCG@5", "P(rel=2)@5", "AP(rel=2)")
DRAWS, SEED = 200, 0


def boundary_population(human: dict[str, dict[str, int]], *, seed: int) -> PairPopulation:
    """The tests' runs plus a near-perfect and a near-zero run, each depth 30."""
    runs = runs_for(human, seed=seed + 1, runs=5)
    rng = np.random.default_rng(seed + 2)
    for name, quality in (("near-perfect", 2.5), ("near-zero", -2.0)):
        runs[name] = {}
        for turn in sorted(human):
            score = {d: quality * human[turn][d] + rng.normal(0, 1.0) for d in sorted(human[turn])}
            top = sorted(score, key=lambda d: -score[d])[:30]
            runs[name][turn] = {d: float(30 - i) for i, d in enumerate(top)}
    return pair_population(machine=machine_judge(human, seed=seed), human=human, rankings=runs)


def main() -> None:
    if not IKAT_QRELS.exists():
        print(f"iKAT 2024 qrels not found at {IKAT_QRELS} (set ASSAY_SHARED_DATA)")
        return
    pop = boundary_population(read_qrels(IKAT_QRELS), seed=1)
    print(f"runs: {', '.join(pop.runs)}; {len(pop.turns)} turns, {pop.size} pairs")
    for text in MEASURES:
        measure = parse_ranked(text)
        truth = true_scores(pop, measure, pop.human)
        machine = turn_scores(pop, measure, pop.machine)
        print(f"\n{text}: true {np.round(truth, 3)}")
        frame = frame_for(pop, measure)
        for turns in TURNS:
            _row(pop, measure, truth, machine, frame, turns)


def _row(pop, measure, truth, machine, frame, turns: int) -> None:  # noqa: ANN001
    rng = np.random.default_rng(SEED)
    lo = {i: [] for i in INTERVALS}
    hi = {i: [] for i in INTERVALS}
    cost = []
    for _ in range(DRAWS):
        draw = two_stage_draw(population=pop, measure=measure, budget=0, rng=rng, turns=turns, frame=frame)
        human, _empty = drawn_turn_scores(pop, measure, draw.chosen, draw.turns, frame)
        got = turn_level(
            human=human, machine_drawn=machine[:, draw.turns], machine_all=machine, method="ppi++"
        )
        for i in INTERVALS:
            _e, a, b = two_stage_intervals(got=got, alpha=0.05, interval=i, exact=measure.name == "P")
            lo[i].append(a)
            hi[i].append(b)
        cost.append(len(draw.chosen))
    print(f"  {turns} turns, {np.mean(cost):.0f} pairs")
    old = None
    for i in INTERVALS:
        a, b = np.array(lo[i]).T, np.array(hi[i]).T
        covered = ((a - 1e-12 <= truth[:, None]) & (truth[:, None] <= b + 1e-12)).mean(1)
        width = (b - a).mean(1)
        old = width if old is None else old
        print(
            f"    {i:8} worst {covered.min():.3f}  per run {np.round(covered, 2)}  width {width.mean():.3f} "
            f"per run {np.round(width, 3)}  x old {width.mean() / old.mean():.2f}"
        )


if __name__ == "__main__":
    main()
