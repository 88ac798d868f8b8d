"""Why nDCG@k is refused from pair samples: the bias of every ideal-DCG estimator tried, on the iKAT 2024 qrels.

Population: the public iKAT 2024 qrels (20,575 pairs, 116 turns; ASSAY_SHARED_DATA or ../shared/data) with
the tests' five synthetic runs and noisy, miscalibrated machine judge (tests/judging/pair_data.py). For each
budget, `DRAWS` stratified samples (machine grade x "some run ranks the pair in its top 5", Neyman
allocation, as `sample_for_humans --design stratified` draws them) give every run's nDCG@5 by:

- shipped: `ranked.ranked_estimates` (strat-ppi++), the estimator `pair_estimate` refuses to offer;
- true ideal: the same design-based DCG over each turn's true ideal DCG (not available in practice: it
  shows the DCG part is unbiased, so the ideal DCG is the whole problem);
- (a) ideal DCG from per-turn counts of each grade: design-unbiased per-turn counts (difference
  estimator); the strata's prediction alone; that with the expected ideal under its binomial spread; an
  empirical-Bayes (gamma-Poisson) per-turn richness factor; a latent-class model (Dawid-Skene: P(machine |
  human) shared, each turn's grade mix by EM from its machine grades and drawn labels), per turn and per
  (turn, rank band);
- (b) the collection-level ratio (sum of DCG over sum of ideal DCG: a different measure, its gap to mean
  nDCG shown on the full labels) and a delete-a-group jackknife bias correction of the shipped estimator;
- (c) how many turns' ideal DCG a turn-stratified census of the highly graded pairs would pin.

Printed: each approach's bias (mean estimate minus truth) per run and the spread (sd over draws) it has to
beat. Pure numpy, about a minute. Not part of the test suite.
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

from judging.measures.hybrid.pair_simulation import allocation_for, draw_block  # noqa: E402
from judging.measures.hybrid.pairs import (  # noqa: E402
    PairPopulation,
    design_strata,
    neyman_allocation,
    pilot_spreads,
)
from judging.measures.hybrid.ranked import (  # noqa: E402
    Layout,
    coefficients,
    expected_ideal_curve,
    gain,
    ideal_curve,
    layout_for,
    parse_ranked,
    ranked_estimates,
    true_scores,
)
from judging.measures.hybrid.simulation import simulate  # noqa: E402
from tests.judging.pair_data import IKAT_QRELS, population, read_qrels  # noqa: E402

BUDGETS, DRAWS, SEED, GROUPS = (1000, 2000), 100, 0, 10
MEASURE = parse_ranked("nDCG@5")


def latent_class_counts(
    turn: np.ndarray,
    machine: np.ndarray,
    groups: int,
    idx: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    kind: np.ndarray,
    prior: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(R, groups, 4) expected count of pairs graded >= 1..4 per group, and their variance."""
    reps, n = idx.shape
    m_all, y_int = machine.astype(int), y.astype(int)
    rep = np.repeat(np.arange(reps), n)
    t_s, m_s = turn[idx].ravel(), m_all[idx].ravel()
    joint = np.full((reps, 5, 5), 0.1)
    np.add.at(joint, (rep, y_int.ravel(), m_s), np.broadcast_to(w, idx.shape).ravel())
    confusion = joint / joint.sum(2, keepdims=True)
    by_kind = np.full((reps, int(kind.max()) + 1, 5), 0.1)
    np.add.at(by_kind, (rep, kind[t_s], y_int.ravel()), np.broadcast_to(w, idx.shape).ravel())
    centre = (by_kind / by_kind.sum(2, keepdims=True))[:, kind, :]
    every = np.zeros((groups, 5))
    np.add.at(every, (turn, m_all), 1.0)
    drawn_m, drawn_h = np.zeros((reps, groups, 5)), np.zeros((reps, groups, 5))
    np.add.at(drawn_m, (rep, t_s, m_s), 1.0)
    np.add.at(drawn_h, (rep, t_s, y_int.ravel()), 1.0)
    undrawn = every[None] - drawn_m
    mix = centre.copy()

    def posterior(mix: np.ndarray) -> np.ndarray:
        joint = mix[..., :, None] * confusion[:, None]
        return joint / np.maximum(joint.sum(2, keepdims=True), 1e-300)

    for _ in range(50):
        expected = (posterior(mix) * undrawn[:, :, None, :]).sum(-1) + drawn_h
        mix = (expected + prior * centre) / (expected.sum(-1, keepdims=True) + prior)
    post = posterior(mix)
    q = np.stack([post[:, :, lv:, :].sum(2) for lv in range(1, 5)], -1)  # R, G, m, level
    counts = (q * undrawn[..., None]).sum(2) + np.stack([drawn_h[..., lv:].sum(-1) for lv in range(1, 5)], -1)
    return counts, (q * (1 - q) * undrawn[..., None]).sum(2)


def main() -> None:
    if not IKAT_QRELS.exists():
        print(f"iKAT 2024 qrels not found at {IKAT_QRELS} (set ASSAY_SHARED_DATA)")
        return
    pop = population(read_qrels(IKAT_QRELS), seed=1)
    turns, k = len(pop.turns), MEASURE.cutoff or 5
    truth = true_scores(pop, MEASURE, pop.human)
    level = np.stack([np.bincount(pop.turn, pop.human >= lv, turns) for lv in range(1, 5)], -1)
    ideal_true = ideal_curve(level.astype(float), k)[0].sum(-1)
    c = coefficients(pop, MEASURE)
    dcg_true = np.stack([np.bincount(pop.turn, row * gain(pop.human, MEASURE), turns) for row in c])
    print(f"iKAT 2024: {pop.size:,} pairs, {turns} turns; true nDCG@5 {np.round(truth, 3)}")
    gap = dcg_true.sum(1) / ideal_true.sum() - truth
    print(f"(b) collection ratio minus mean nDCG@5, on the full labels: {np.round(gap, 3)}")
    for label, labelled in (
        ("machine >= 3", pop.machine >= 3),
        ("machine >= 2", pop.machine >= 2),
        ("top 20 by machine grade per turn", _top_per_turn(pop, 20)),
    ):
        part = np.stack(
            [np.bincount(pop.turn, (pop.human >= lv) & labelled, turns) for lv in range(1, 5)], -1
        )
        exact = int(np.isclose(ideal_curve(part.astype(float), k)[0].sum(-1), ideal_true).sum())
        print(
            f"(c) census of {label} ({int(labelled.sum()):,} pairs) pins the ideal DCG of {exact}/{turns} turns"
        )
    top = (c > 0).any(0)
    for budget in BUDGETS:
        strata, counts = allocation_for(pop, measure=MEASURE, budget=budget, design="stratified")
        layout = layout_for(strata, counts)
        idx = draw_block(np.random.default_rng(SEED), strata, counts, DRAWS)
        y = pop.human[idx]
        w, h_col = layout.weights(), layout.column_strata()
        rows = np.arange(DRAWS)[:, None]
        n_ht = np.bincount(strata * turns + pop.turn, minlength=len(counts) * turns).reshape(-1, turns)

        flat = (rows * turns + pop.turn[idx]).ravel()

        def by_turn(values: np.ndarray, flat: np.ndarray = flat) -> np.ndarray:
            return np.bincount(flat, values.ravel(), DRAWS * turns).reshape(DRAWS, turns)

        def stratum_means(values: np.ndarray, slices: list[slice] = layout.slices) -> np.ndarray:
            return np.stack([values[:, s].mean(1) for s in slices], 1)

        ideals = {}
        model, unbiased, spread, eb = [], [], [], []
        for lv in range(1, 5):
            hit = (y >= lv).astype(float)
            p = stratum_means(hit)
            model.append(p @ n_ht)
            unbiased.append(model[-1] + by_turn(w * (hit - p[:, h_col])))
            spread.append((p * (1 - p)) @ n_ht)
            seen, expect = by_turn(hit), by_turn(p[:, h_col])
            # gamma-Poisson: the turn's factor on the strata's rate, shrunk by moments across turns
            tau2 = np.maximum(
                ((seen - expect) ** 2 - expect).sum(1) / np.maximum((expect**2).sum(1), 1e-9), 1e-3
            )
            a = (1 / tau2)[:, None]
            eb.append(seen + (model[-1] - expect) * (a + seen) / (a + expect))
        stack = [np.stack(v, -1) for v in (model, unbiased, spread, eb)]
        ideals["(a) design-unbiased per-turn counts"] = ideal_curve(stack[1], k)[0].sum(-1)
        ideals["(a) strata's prediction"] = ideal_curve(stack[0], k)[0].sum(-1)
        ideals["(a) strata's prediction, expected ideal"] = expected_ideal_curve(stack[0], stack[2], k)[
            0
        ].sum(-1)
        ideals["(a) empirical-Bayes turn richness"] = ideal_curve(stack[3], k)[0].sum(-1)
        lc, lc_var = latent_class_counts(pop.turn, pop.machine, turns, idx, y, w, np.zeros(turns, int))
        ideals["(a) latent class per turn"] = expected_ideal_curve(lc, lc_var, k)[0].sum(-1)
        lc, lc_var = latent_class_counts(
            pop.turn * 2 + top, pop.machine, 2 * turns, idx, y, w, np.tile([0, 1], turns)
        )
        lc, lc_var = (v.reshape(DRAWS, turns, 2, 4).sum(2) for v in (lc, lc_var))
        ideals["(a) latent class per (turn, band)"] = expected_ideal_curve(lc, lc_var, k)[0].sum(-1)
        ideals["true ideal (not available)"] = np.broadcast_to(ideal_true, (DRAWS, turns))
        got = ranked_estimates(
            population=pop, measure=MEASURE, layout=layout, idx=idx, y=y, method="strat-ppi++"
        )
        print(f"\n{budget} pairs, {DRAWS} draws: bias per run (spread in brackets)")
        _row("shipped (strat-ppi++)", got.estimate, truth, got.se)
        corrected, jk_se = _jackknife(pop, layout, strata, idx, got.estimate)
        _row("(b) jackknife-corrected shipped", corrected, truth, jk_se)
        for name, ideal in ideals.items():
            _row(name, _design_ndcg(pop, c, strata, layout, idx, ideal), truth, None)
    # The latent class's assumption (the machine errs alike on drawn and undrawn pairs of a grade) holds
    # when the draw is uniform within machine grades; its spread then sets the width to beat whole turns.
    grades, names, _worth = design_strata(pop.machine)
    spreads = pilot_spreads(strata=grades, count=len(names), human=pop.human)
    per_pair = pop.size / turns
    whole = _whole_turn_widths(pop, c, sorted({round(b / per_pair) for b in BUDGETS}))
    print("\ndrawn within machine grades only (no rank band), latent class per turn:")
    for budget in BUDGETS:
        counts = neyman_allocation(sizes=np.bincount(grades), spreads=spreads, budget=budget)
        layout = layout_for(grades, counts)
        idx = draw_block(np.random.default_rng(SEED), grades, counts, DRAWS)
        lc, lc_var = latent_class_counts(
            pop.turn, pop.machine, turns, idx, pop.human[idx], layout.weights(), np.zeros(turns, int)
        )
        estimates = _design_ndcg(pop, c, grades, layout, idx, expected_ideal_curve(lc, lc_var, k)[0].sum(-1))
        _row(f"{budget} pairs", estimates, truth, None)
        t = round(budget / per_pair)
        print(
            f"    3.92 x sd (a 95% width) {3.92 * estimates.std(1).mean():.3f}; whole-turn ppi++ interval with "
            f"{t} turns (as many pairs) {whole[t]:.3f}"
        )


def _design_ndcg(
    pop: PairPopulation, c: np.ndarray, strata: np.ndarray, layout: Layout, idx: np.ndarray, ideal: np.ndarray
) -> np.ndarray:
    """(runs, R) nDCG with the design-based DCG (strata means plus the drawn pairs' weighted residuals)
    over a given (R, turns) ideal DCG."""
    reps, turns = ideal.shape
    flat = (np.arange(reps)[:, None] * turns + pop.turn[idx]).ravel()
    g = gain(pop.human[idx], MEASURE)
    mean = np.stack([g[:, s].mean(1) for s in layout.slices], 1)
    resid = g - mean[:, layout.column_strata()]
    ok = ideal > 0
    estimates = []
    for row in c:
        s_c = np.bincount(strata * turns + pop.turn, row, len(layout.slices) * turns).reshape(-1, turns)
        weighted = (layout.weights() * row[idx] * resid).ravel()
        dcg = mean @ s_c + np.bincount(flat, weighted, reps * turns).reshape(reps, turns)
        estimates.append(np.where(ok, dcg / np.where(ok, ideal, 1.0), 0.0).mean(-1))
    return np.array(estimates)


def _whole_turn_widths(pop: PairPopulation, c: np.ndarray, budgets: list[int]) -> dict[int, float]:
    """Mean ppi++ interval width of nDCG@5 when whole turns are sampled (`simulation.simulate`)."""
    turns = len(pop.turns)

    def per_turn(grades: np.ndarray) -> np.ndarray:
        dcg = np.stack([np.bincount(pop.turn, row * gain(grades, MEASURE), turns) for row in c])
        level = np.stack([np.bincount(pop.turn, grades >= lv, turns) for lv in range(1, 5)], -1)
        ideal = ideal_curve(level.astype(float), MEASURE.cutoff or 5)[0].sum(-1)
        return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)

    result = simulate(
        truth=per_turn(pop.human), machine=per_turn(pop.machine), budgets=budgets, repeats=300, seed=1
    )
    return {b: result.budgets[b]["ppi++"].mean_width for b in budgets}


def _top_per_turn(pop: PairPopulation, count: int) -> np.ndarray:
    chosen = np.zeros(pop.size, dtype=bool)
    key = pop.machine + np.random.default_rng(0).random(pop.size) * 0.01
    for t in range(len(pop.turns)):
        members = np.flatnonzero(pop.turn == t)
        chosen[members[np.argsort(-key[members])[:count]]] = True
    return chosen


def _jackknife(
    pop: PairPopulation, layout: Layout, strata: np.ndarray, idx: np.ndarray, full: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Delete-a-group jackknife within strata: (bias-corrected estimates, their jackknife se)."""
    replicates = []
    for g in range(GROUPS):
        keep, sizes = [], []
        for s in layout.slices:
            cols = np.arange(s.start, s.stop)
            cols = cols[np.arange(len(cols)) % GROUPS != g]
            keep.append(cols)
            sizes.append(len(cols))
        sub = idx[:, np.concatenate(keep)]
        replicates.append(
            ranked_estimates(
                population=pop,
                measure=MEASURE,
                layout=layout_for(strata, np.array(sizes)),
                idx=sub,
                y=pop.human[sub],
                method="strat-ppi++",
            ).estimate
        )
    reps = np.stack(replicates)
    se = np.sqrt((GROUPS - 1) / GROUPS * ((reps - reps.mean(0)) ** 2).sum(0))
    return GROUPS * full - (GROUPS - 1) * reps.mean(0), se


def _row(name: str, estimates: np.ndarray, truth: np.ndarray, se: np.ndarray | None) -> None:
    bias = estimates.mean(1) - truth
    shown = np.array2string(np.round(bias, 3) + 0.0, precision=3, floatmode="fixed", suppress_small=True)
    line = f"  {name:<44} bias {shown}"
    line += f"  (sd {estimates.std(1).min():.3f}-{estimates.std(1).max():.3f})"
    if se is not None:
        covered = (np.abs(estimates - truth[:, None]) <= 1.96 * se).mean(1)
        line += f"  coverage {covered.min():.2f}-{covered.max():.2f}"
    print(line)


if __name__ == "__main__":
    main()
