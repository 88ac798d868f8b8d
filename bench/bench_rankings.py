"""Rankings from every design, and plans that hold per pilot, on the iKAT 2024 qrels.

Population: the public iKAT 2024 qrels (116 turns; ASSAY_SHARED_DATA or ../shared/data) with six
synthetic runs (a weak one, two close pairs, a near-perfect one; made as the tests' are) and noisy, miscalibrated machine judge (tests/judging/pair_data.py).

1. Tau's interval. The estimand is Kendall's tau-b of the hybrid ranking with the full-judgment ranking
   (every pair's human grade). For each design and size, `DRAWS` samples give the hybrid ranking, its
   Holm-settled pairs and the one-sided bound `estimate` prints ([bound, 1]); printed: the share of
   samples whose bound holds the estimand (coverage), the mean bound, the mean settled share. Whole turns
   and two-stage (nDCG@5, ppi++) at 10/20/40 turns; stratified pairs (P(rel=2)@5, strat-ppi++; nDCG@5 is
   not offered from one-stage pair samples) at as many pairs as 10/20/40 turns hold. Then
   `rank_agreement`'s percentile bootstrap over turns (human against machine per-turn nDCG@5, estimand
   the tau between their rankings over every turn) at the same turn counts.
2. Plans per pilot. `PILOTS` pilots of 20 whole turns each plan the turns for every run's nDCG@5 interval
   to be at most `WIDTH` wide in 80% of samples, sized from the pilot's variance (old) and from its 90%
   upper bound (new); `FRESH` fresh samples of the planned size say whether that pilot's plan met its
   assurance. Printed: the share of pilots whose plan met it, the worst pilot's share, the plans' spread.

Pure numpy, a few minutes. Not part of the test suite.
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

from judging.measures.hybrid.estimate import Draw, HybridEstimate, add_pairs, runs_estimate  # noqa: E402
from judging.measures.hybrid.estimators import Estimate, mean_interval  # noqa: E402
from judging.measures.hybrid.pair_simulation import allocation_for, draw_block  # noqa: E402
from judging.measures.hybrid.pairs import pair_population  # noqa: E402
from judging.measures.hybrid.planning import plan_budget  # noqa: E402
from judging.measures.hybrid.ranked import (  # noqa: E402
    layout_for,
    parse_ranked,
    ranked_estimates,
    stratified_se,
    true_scores,
    turn_scores,
)
from judging.measures.hybrid.table import UnitTable  # noqa: E402
from judging.measures.hybrid.two_stage import (  # noqa: E402
    drawn_turn_scores,
    frame_for,
    turn_level,
    two_stage_draw,
)
from judging.measures.ranking import kendall_tau_b, tau_over_turns  # noqa: E402
from tests.judging.pair_data import IKAT_QRELS, machine_judge, read_qrels  # noqa: E402

TURNS, DRAWS, PILOTS, FRESH, WIDTH, PILOT, SEED = (
    (10, 20, 40),
    int(os.environ.get("DRAWS", 300)),
    60,
    200,
    0.12,
    20,
    0,
)


# Six runs as the tests' synthetic ones (tests/judging/pair_data.py) but of chosen quality: a weak one, two
# close pairs, and a near-perfect one, so that some pairs stay unsettled at every size here.
QUALITIES = (0.3, 0.9, 0.95, 1.5, 1.6, 6.0)


def population_of(human: dict[str, dict[str, int]], *, seed: int):  # noqa: ANN201
    rng = np.random.default_rng(seed + 1)
    depth = 30
    rankings: dict[str, dict[str, dict[str, float]]] = {}
    for r, quality in enumerate(QUALITIES):
        rankings[f"run{r}"] = {}
        for turn in sorted(human):
            score = {d: quality * g + rng.normal(0, 1.0) for d, g in sorted(human[turn].items())}
            for extra in range(3):
                score[f"unpooled-{turn}-{extra}"] = rng.normal(1.0, 1.0)
            top = sorted(score, key=lambda d: -score[d])[:depth]
            rankings[f"run{r}"][turn] = {d: float(depth - i) for i, d in enumerate(top)}
    return pair_population(machine=machine_judge(human, seed=seed), human=human, rankings=rankings)


def _empty(unit: str, measure: str) -> HybridEstimate:
    return HybridEstimate(task="relevance", measure=measure, unit=unit, method="ppi++", alpha=0.05, design="")


def _fill(result: HybridEstimate, runs: list[str], est: np.ndarray) -> None:
    for r, run in enumerate(runs):
        result.runs[run] = Estimate(float(est[r]), 0.0, 1.0, 0.0, 0.0, 1, 1, float("nan"))


def _row(name: str, turns: int, bounds: list[float], truth_taus: list[float], settled: list[float]) -> None:
    b, t = np.array(bounds), np.array(truth_taus)
    print(
        f"  {name:<18} {turns:>3} turns: coverage {np.mean(b <= t + 1e-12):.3f}, mean bound "
        f"{b.mean():.3f}, mean tau with truth {t.mean():.3f}, settled {np.mean(settled):.2f}"
    )


def taus(pop) -> None:  # noqa: ANN001
    ndcg, prec = parse_ranked("nDCG@5"), parse_ranked("P(rel=2)@5")
    human_t, machine_t = turn_scores(pop, ndcg, pop.human), turn_scores(pop, ndcg, pop.machine)
    truth = human_t.mean(1)
    runs, big_t = list(pop.runs), len(pop.turns)
    table = UnitTable(
        task="relevance",
        measure="nDCG@5",
        unit="turn",
        keys=list(pop.turns),
        runs=runs,
        machine=machine_t,
        human=human_t,
    )
    frame = frame_for(pop, ndcg)
    p_truth = true_scores(pop, prec, pop.human)
    per_pair = pop.size / big_t
    print(f"1. tau's bound (truth nDCG@5 {np.round(truth, 3)}), {DRAWS} samples per cell")
    for n_t in TURNS:
        rng = np.random.default_rng(SEED + n_t)
        cells: dict[str, tuple[list[float], list[float], list[float]]] = {
            k: ([], [], []) for k in ("whole turns", "two-stage", "stratified pairs")
        }
        for _ in range(DRAWS):
            mask = np.zeros(big_t, bool)
            mask[rng.choice(big_t, n_t, replace=False)] = True
            got = runs_estimate(table=table, method="ppi++", draw=Draw(mask, None, "uniform turns"))
            _keep(cells["whole turns"], got, runs, truth)

            draw = two_stage_draw(
                population=pop, measure=ndcg, budget=n_t * 40, rng=rng, turns=n_t, frame=frame
            )
            human, _e = drawn_turn_scores(pop, ndcg, draw.chosen, draw.turns, frame)
            level = turn_level(
                human=human, machine_drawn=machine_t[:, draw.turns], machine_all=machine_t, method="ppi++"
            )
            resid = human - level.lam[:, None] * machine_t[:, draw.turns]
            result = _empty("pair", "nDCG@5")
            _fill(result, runs, level.estimate)
            add_pairs(
                result,
                estimates=level.estimate,
                difference_se=lambda i, j, r=resid: float(np.std(r[i] - r[j], ddof=1) / np.sqrt(r.shape[1])),
                df=n_t - 1,
                human_only=human.mean(1),
                n_human=len(draw.chosen),
                n_machine=pop.size,
            )
            _keep(cells["two-stage"], result, runs, truth)

            strata, counts = allocation_for(
                pop, measure=prec, budget=round(n_t * per_pair), design="stratified"
            )
            layout = layout_for(strata, counts)
            idx = draw_block(rng, strata, counts, 1)
            est = ranked_estimates(
                population=pop, measure=prec, layout=layout, idx=idx, y=pop.human[idx], method="strat-ppi++"
            )
            classical = ranked_estimates(
                population=pop, measure=prec, layout=layout, idx=idx, y=pop.human[idx], method="classical"
            )
            e = est.residuals[:, 0, :]
            result = _empty("pair", "P(rel=2)@5")
            _fill(result, runs, est.estimate[:, 0])
            add_pairs(
                result,
                estimates=est.estimate[:, 0],
                difference_se=lambda i, j, e=e, lay=layout: float(
                    stratified_se((e[i] - e[j])[None, :], lay)[0]
                ),
                df=idx.shape[1] - 1,
                human_only=classical.estimate[:, 0],
                n_human=idx.shape[1],
                n_machine=pop.size,
            )
            _keep(cells["stratified pairs"], result, runs, p_truth)
        for name, (bounds, truth_taus, settled) in cells.items():
            _row(name, n_t, bounds, truth_taus, settled)
    machine_truth = machine_t.mean(1)
    target = float(kendall_tau_b(truth, machine_truth))
    print(
        f"   rank_agreement's bootstrap over turns (human vs machine nDCG@5, tau over every turn {target:.3f})"
    )
    for n_t in TURNS:
        rng = np.random.default_rng(SEED + 100 + n_t)
        hits, widths = [], []
        for _ in range(DRAWS):
            pick = rng.choice(big_t, n_t, replace=False)
            a, b = human_t[:, pick], machine_t[:, pick]
            per_a = {run: {str(t): float(a[r, t]) for t in range(n_t)} for r, run in enumerate(runs)}
            per_b = {run: {str(t): float(b[r, t]) for t in range(n_t)} for r, run in enumerate(runs)}
            got = tau_over_turns(
                runs=runs,
                x=a.mean(1),
                y=b.mean(1),
                per_turn_a=per_a,
                per_turn_b=per_b,
                seed=int(rng.integers(1e9)),
            )
            if got is None:
                continue
            lo, hi = got["ci"]
            hits.append(lo - 1e-12 <= target <= hi + 1e-12)
            widths.append(hi - lo)
        print(
            f"  {'turn bootstrap':<18} {n_t:>3} turns: coverage {np.mean(hits):.3f}, width {np.mean(widths):.3f}"
        )


def _keep(cell, result: HybridEstimate, runs: list[str], truth: np.ndarray) -> None:  # noqa: ANN001
    tau = result.rank_agreement
    if tau is None:
        return
    est = np.array([result.runs[r].estimate for r in runs])
    cell[0].append(tau.lo)
    cell[1].append(float(kendall_tau_b(est, truth)))
    cell[2].append(result.settled_share() or 0.0)


def plans(pop) -> None:  # noqa: ANN001
    ndcg = parse_ranked("nDCG@5")
    human_t, machine_t = turn_scores(pop, ndcg, pop.human), turn_scores(pop, ndcg, pop.machine)
    runs, big_t = list(pop.runs), len(pop.turns)
    table = UnitTable(
        task="relevance",
        measure="nDCG@5",
        unit="turn",
        keys=list(pop.turns),
        runs=runs,
        machine=machine_t,
        human=human_t,
    )
    rng = np.random.default_rng(SEED)
    met: dict[str, list[float]] = {"old": [], "new": []}
    sizes: dict[str, list[int]] = {"old": [], "new": []}
    print(
        f"\n2. plans from {PILOTS} pilots of {PILOT} turns, width {WIDTH} in 80% of samples, {FRESH} fresh samples"
    )
    for _ in range(PILOTS):
        mask = np.zeros(big_t, bool)
        mask[rng.choice(big_t, PILOT, replace=False)] = True
        for name, upper in (("old", None), ("new", 0.9)):
            plan = plan_budget(table=table, drawn=mask, target_width=WIDTH, pilot_upper=upper)
            n = plan.as_json()["budget_for_width"]
            if n is None:
                n = big_t
            sizes[name].append(n)
            fresh = np.random.default_rng(int(rng.integers(1e9)))
            ok = 0
            for _f in range(FRESH):
                pick = fresh.choice(big_t, n, replace=False)
                widths = [
                    mean_interval(
                        y=human_t[r, pick], yhat=machine_t[r, pick], yhat_all=machine_t[r], method="ppi++"
                    ).width
                    for r in range(len(runs))
                ]
                ok += max(widths) <= WIDTH + 1e-12
            met[name].append(ok / FRESH)
    for name in ("old", "new"):
        share = np.array(met[name])
        n = np.array(sizes[name])
        print(
            f"  {name}: pilots meeting 80%: {np.mean(share >= 0.8):.2f}, worst pilot {share.min():.2f}, "
            f"mean share {share.mean():.2f}; planned turns median {np.median(n):.0f} "
            f"(5-95% {np.percentile(n, 5):.0f}-{np.percentile(n, 95):.0f})"
        )
        short = [(int(k), round(float(m), 2)) for k, m in zip(n, share, strict=True) if m < 0.8]
        print(f"    pilots short of 80% (planned turns, share met): {short}")


def main() -> None:
    if not IKAT_QRELS.exists():
        print(f"iKAT 2024 qrels not found at {IKAT_QRELS} (set ASSAY_SHARED_DATA)")
        return
    pop = population_of(read_qrels(IKAT_QRELS), seed=1)
    which = sys.argv[1:] or ["taus", "plans"]
    if "taus" in which:
        taus(pop)
    if "plans" in which:
        plans(pop)


if __name__ == "__main__":
    main()
