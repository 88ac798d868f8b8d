"""The pair design's budget simulation on 20,000 (turn, passage) pairs, 5 runs, 4 budgets, 500 repeats.

Synthetic: 200 turns of 100 pooled pairs, human grades 0-4 whose richness varies by turn, a noisy and
miscalibrated machine grade, runs of growing quality. Timed: `simulate_pairs` (stratified by machine grade
and rank band, classical, ppi++ and strat-ppi++) for P@5 (nDCG@k from pairs is refused: see
docs/statistics.md). Baseline in the same invocation: the
whole-turn simulation (`simulation.simulate`) of the same per-turn values with as many human pairs (a
turn holds 100), which is what sampling whole turns would give; both widths are printed with their ratio.
Target: each pair simulation under 60 s. Pure numpy, no database.
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

from judging.measures.hybrid.pair_simulation import simulate_pairs  # noqa: E402
from judging.measures.hybrid.pairs import PairPopulation  # noqa: E402
from judging.measures.hybrid.ranked import coefficients, gain, parse_ranked  # noqa: E402
from judging.measures.hybrid.simulation import simulate  # noqa: E402

TURNS, PER_TURN, RUNS, BUDGETS, REPEATS = 200, 100, 5, (500, 1000, 2000, 4000), 500


def collection(seed: int = 0) -> PairPopulation:
    rng = np.random.default_rng(seed)
    turn = np.repeat(np.arange(TURNS), PER_TURN)
    richness = rng.beta(2, 3, TURNS)[turn]
    human = rng.binomial(4, richness * rng.beta(1, 2, turn.size)).astype(float)
    machine = np.clip(np.round(0.6 * human + 0.7 + rng.normal(0, 0.9, turn.size)), 0, 4)
    rank = np.zeros((RUNS, turn.size), dtype=np.int64)
    for r in range(RUNS):
        score = (0.3 + 0.35 * r) * human + rng.normal(0, 1, turn.size)
        for t in range(TURNS):
            members = np.flatnonzero(turn == t)
            order = members[np.argsort(-score[members])][:30]
            rank[r, order] = np.arange(1, len(order) + 1)
    keys = [f"{t}\tp{j}" for j, t in enumerate(turn)]
    return PairPopulation(
        keys=keys,
        turns=[str(t) for t in range(TURNS)],
        turn=turn,
        machine=machine,
        human=human,
        runs=[f"run{r}" for r in range(RUNS)],
        rank=rank,
    )


def main() -> None:
    population = collection()
    print(
        f"pair simulation: {population.size:,} pairs, {RUNS} runs, budgets {list(BUDGETS)}, {REPEATS} repeats"
    )
    for name in ("P(rel=2)@5",):
        measure = parse_ranked(name)
        start = time.perf_counter()
        pairs = simulate_pairs(
            population=population, measure=measure, budgets=BUDGETS, repeats=REPEATS, seed=0
        )
        ours = time.perf_counter() - start
        c = coefficients(population, measure)
        per_turn = [
            np.stack([np.bincount(population.turn, row * gain(g, measure), TURNS) for row in c])
            for g in (population.human, population.machine)
        ]
        turn_budgets = [b // PER_TURN for b in BUDGETS]
        start = time.perf_counter()
        whole = simulate(
            truth=per_turn[0],
            machine=per_turn[1],
            budgets=turn_budgets,
            repeats=REPEATS,
            seed=0,
            methods=["classical", "ppi++"],
        )
        base = time.perf_counter() - start
        print(f"\n{name}: pair-stratified {ours:6.2f} s (target < 60 s); whole-turn baseline {base:6.2f} s")
        print(
            f"{'pairs':>6}  {'method':<11}  coverage  worst_run  mean_width  whole-turn ppi++ width  narrower"
        )
        for b, tb in zip(BUDGETS, turn_budgets, strict=True):
            reference = whole.budgets[tb]["ppi++"].mean_width
            for method, f in pairs.budgets[b].items():
                print(
                    f"{b:>6}  {method:<11}  {f.coverage:8.3f}  {f.worst_run_coverage:9.3f}  {f.mean_width:10.4f}  "
                    f"{reference:22.4f}  "
                    + (
                        f"{reference / f.mean_width:7.1f}x"
                        if f.mean_width > 0
                        else "  exact (every top-k pair drawn)"
                    )
                )
        assert ours < 60, f"too slow: {ours:.1f} s"


if __name__ == "__main__":
    main()
