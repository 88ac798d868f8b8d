"""AP from a pair sample: inferred AP (Yilmaz and Aslam 2006) with the strata's weights.

For each relevant drawn pair at rank i of a run, the expected precision at i is
1/i + (i-1)/i * (pooled pairs above / (i-1)) * (relevant share of the drawn pairs above), and AP is the
mean of these over the relevant drawn pairs. With a uniform sample this is trec_eval's infAP exactly
(tested against pytrec_eval): the relevant share above uses trec_eval's epsilon, and passages the run
retrieved outside the pool count as not relevant. With strata (xinfAP's generalisation, Yilmaz, Kanoulas
and Aslam 2008) the relevant share above rank i is taken stratum by stratum, each weighted by the
stratum's pooled pairs above i, and the mean over relevant pairs weights each by 1/pi. A ratio of
estimates, it is consistent rather than unbiased, and at the sampling rates people afford far off, so no
command estimates AP from a single-stage sample (`ranked.AP_REFUSED`); with every pair sampled it is the
run's AP, the reference `ranked.true_scores` uses.
"""

from __future__ import annotations

import numpy as np

from judging.measures.hybrid.pairs import PairPopulation

EPSILON = 0.00001  # trec_eval's INFAP_EPSILON


def _turn_ap(
    ranked: np.ndarray,
    positions: np.ndarray,
    relevant: np.ndarray,
    judged: np.ndarray,
    strata: np.ndarray,
    weights: np.ndarray,
    strata_count: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(sum of weighted precision estimates over relevant drawn pairs, their total weight), (B,) each.

    `ranked` are a turn's pooled pairs in the run's order, `positions` their 0-based ranks; `weights`
    (B, p) each pair's weight in each replicate (0 where not drawn)."""
    b = weights.shape[0]
    est_above = np.zeros((b, len(ranked)))
    for h in range(strata_count):
        in_h = strata == h
        pooled_h = np.cumsum(in_h) - in_h  # pooled pairs of h above each position
        w_judged = weights * (judged & in_h)
        rel_w = np.cumsum(w_judged * relevant, 1) - w_judged * relevant
        all_w = np.cumsum(w_judged, 1) - w_judged
        est_above += pooled_h * (rel_w + EPSILON * (pooled_h > 0)) / (all_w + 2 * EPSILON)
    j = positions.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(j == 0, 1.0, 1.0 / (j + 1) + est_above / (j + 1))
    hit = weights * (judged & relevant)
    return (hit * term).sum(1), hit.sum(1)


def inferred_ap_replicates(
    population: PairPopulation,
    *,
    run: int,
    grades: np.ndarray,
    rel: int,
    weights: np.ndarray,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """(B,) the run's inferred AP, mean over turns, for B weight vectors `weights` (B, N), 0 = not drawn.

    `grades` (N,) the human grades (any value where not drawn); `strata` (N,) None for one stratum."""
    strata = np.zeros(population.size, dtype=np.int64) if strata is None else strata
    count = int(strata.max()) + 1
    relevant_all = np.nan_to_num(grades, nan=-1.0) >= rel
    judged_all = weights > 0
    total = np.zeros(weights.shape[0])
    for t in range(len(population.turns)):
        in_turn = population.turn == t
        num_rel = (weights[:, in_turn] * relevant_all[in_turn]).sum(1)
        members = np.flatnonzero(in_turn & (population.rank[run] > 0))
        if not len(members):
            continue
        members = members[np.argsort(population.rank[run][members], kind="stable")]
        s, _w = _turn_ap(
            members,
            population.rank[run][members] - 1,
            relevant_all[members],
            judged_all[:, members],
            strata[members],
            weights[:, members],
            count,
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            total += np.where(num_rel > 0, s / np.where(num_rel > 0, num_rel, 1.0), 0.0)
    return total / len(population.turns)


def inferred_ap(
    population: PairPopulation,
    *,
    run: int,
    sampled: np.ndarray,
    grades: np.ndarray,
    rel: int,
    weights: np.ndarray | None,
    strata: np.ndarray | None = None,
) -> float:
    """The run's inferred AP from the pairs in `sampled` (bool, N), weighted by `weights` (1/pi) or not.
    With every pair sampled it is the run's AP (up to trec_eval's epsilon)."""
    w = np.where(sampled, 1.0 if weights is None else weights, 0.0)[None, :]
    return float(
        inferred_ap_replicates(population, run=run, grades=grades, rel=rel, weights=w, strata=strata)[0]
    )
