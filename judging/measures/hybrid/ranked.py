"""Each run's nDCG@k and P@k from a pair sample: design-based estimates with delta-method intervals.

A run's score is the mean over turns of f_t(theta_t), where theta_t are totals over the turn's pooled
pairs of per-pair features of the human grade: for P@k, the pairs at ranks 1..k counted relevant
(sum of [y >= rel] / k); for nDCG@k, the run's DCG (sum of y / log2(rank + 1) over ranks 1..k) and, for
the ideal DCG, the turn's count of pairs graded at least l for each grade l. The ideal DCG is a function
of those counts, IDCG = sum over l of F(C_l) with F(c) the sum of the first c discounts (piecewise
linear between whole numbers), exact when the counts are whole, as in infNDCG (Yilmaz, Kanoulas and
Aslam 2008), which builds the ideal ranking from estimated counts of each grade.

Each total is estimated, stratum by stratum of a stratified sample without replacement (one stratum for
a uniform sample), by a difference estimator:

    theta_hat = sum_h [ lam_h * sum over all pairs of h of phi(machine grade)
                        + N_h / n_h * sum over the drawn pairs of h of (phi(human) - lam_h * phi(machine)) ]

which is design-unbiased for any fixed lam (the human-minus-machine correction is estimated within each
stratum and weighted by the stratum's inverse sampling fraction):

* **classical**: lam = 0, the human labels alone (the stratified Horvitz-Thompson estimator);
* **ppi++**: one lam for all strata, tuned to minimise the variance (prediction-powered inference with
  power tuning, Angelopoulos et al. 2023);
* **strat-ppi++**: a lam per stratum, each tuned within its stratum (stratified PPI, Fisch et al. 2024);
  never wider than ppi++, whose single lam is one of its choices.

nDCG's ratio makes the estimate consistent rather than unbiased, and at the budgets people afford its
per-turn ideal DCG runs low by more than the interval's width, so `pair_estimate` does not offer it
from these designs (bench/bench_ndcg_pairs.py measures this and the alternatives tried; `two_stage`
serves nDCG@k instead). The standard error is the delta method's: the score's gradient turns every drawn pair into one
number u (its linearised contribution), and the variance is the stratified sample's,
sum_h N_h^2 (1 - n_h/N_h) s_h^2 / n_h, of u(human) - lam_h u(machine). Everything is vectorised over
repeated samples, so `estimate` and the budget simulation run the same code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.wording import plural
from judging.measures.hybrid.estimators import MIN_UNITS, EstimationError
from judging.measures.hybrid.inferred import inferred_ap
from judging.measures.hybrid.pairs import PairPopulation, design_strata, stratum_of

PAIR_METHODS = ("classical", "ppi++", "strat-ppi++")
RANKED = ("nDCG", "P", "AP")


@dataclass(frozen=True)
class RankedMeasure:
    name: str  # nDCG, P or AP
    cutoff: int | None
    rel: int  # the lowest grade counted relevant (P, AP)
    text: str


def parse_ranked(measure: str) -> RankedMeasure:
    """nDCG@k, P@k, P(rel=r)@k, AP, AP(rel=r), in ir_measures' syntax."""
    import ir_measures

    try:
        parsed = ir_measures.parse_measure(measure)
    except Exception:  # ir_measures raises several types for a name it cannot read
        raise EstimationError(f"unknown measure {measure!r}") from None
    params = dict(parsed.params)
    if parsed.NAME not in RANKED or set(params) - {"cutoff", "rel"}:
        raise EstimationError(
            f"a pair sample estimates nDCG@k, P@k (or P(rel=r)@k) and AP (or AP(rel=r)), not {measure!r}"
        )
    if parsed.NAME == "nDCG" and "rel" in params:
        raise EstimationError("nDCG uses the grades as gains; it takes no rel=")
    cutoff = params.get("cutoff")
    if parsed.NAME in ("nDCG", "P") and cutoff is None:
        raise EstimationError(f"{measure}: give a cutoff, e.g. {parsed.NAME}@5")
    return RankedMeasure(parsed.NAME, cutoff, int(params.get("rel", 1)), measure)


def coefficients(population: PairPopulation, measure: RankedMeasure) -> np.ndarray:
    """(runs, N): each pair's weight in a run's DCG (1/log2(rank+1)) or P@k (1/k) within the cutoff."""
    rank = population.rank
    inside = (rank >= 1) & (rank <= (measure.cutoff or 0))
    if measure.name == "nDCG":
        return np.where(inside, 1.0 / np.log2(np.maximum(rank, 1) + 1.0), 0.0)
    return np.where(inside, 1.0 / (measure.cutoff or 1), 0.0)


def design_value(population: PairPopulation, measure: RankedMeasure) -> np.ndarray:
    """(N,) each pair's weight in the runs' scores, summed over runs: the allocation's guide to where the
    human labels pay; > 0 marks the pairs some run ranks within the cutoff. AP (no cutoff): 1 per run
    retrieving the pair. nDCG: the pairs outside every cutoff get minus a tenth of the mean weight (worth
    that much), since the ideal DCG counts the turn's relevant pairs wherever the runs put them."""
    if measure.name == "AP":
        return np.asarray((population.rank > 0).sum(0).astype(float))
    value: np.ndarray = coefficients(population, measure).sum(0)
    if measure.name == "nDCG" and (value > 0).any():
        # Kept apart from the pairs within the cutoff (their stratum is theirs), but never worth nothing.
        return np.asarray(np.where(value > 0, value, -0.1 * value[value > 0].mean()))
    return value


def gain(grades: np.ndarray, measure: RankedMeasure) -> np.ndarray:
    if measure.name == "nDCG":
        return np.asarray(np.maximum(grades, 0.0))
    return (grades >= measure.rel).astype(float)


def ideal_curve(c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(F(c), F'(c)): the sum of the first c discounts 1/log2(i+1), i <= k, linear between whole numbers."""
    c = np.maximum(c, 0.0)
    i = np.arange(1, k + 1)
    disc = 1.0 / np.log2(i + 1.0)
    value = (np.clip(c[..., None] - (i - 1), 0.0, 1.0) * disc).sum(-1)
    position = np.floor(c).astype(np.int64)  # the discount of the next position filled
    slope = np.where(position < k, 1.0 / np.log2(np.minimum(position, k) + 2.0), 0.0)
    return value, slope


def expected_ideal_curve(mean: np.ndarray, var: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(E[F(C)], dE[F(C)]/d mean) for a count C ~ Normal(mean, var): the ideal DCG's expectation when the
    unlabelled pairs' grades are uncertain. F is concave, so F(E[C]) would overstate the ideal DCG (and
    understate nDCG) at every turn; with var = 0 this is `ideal_curve`."""
    from scipy.special import ndtr

    sd = np.sqrt(np.maximum(var, 0.0))[..., None]
    mu = mean[..., None]
    i = np.arange(1, k + 1)
    disc = 1.0 / np.log2(i + 1.0)

    def above(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # E[max(C - a, 0)] and P(C > a) of the normal; exact where sd = 0.
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, (mu - a) / np.where(sd > 0, sd, 1.0), np.sign(mu - a) * np.inf)
        phi = np.exp(-0.5 * np.where(np.isfinite(z), z, 0.0) ** 2) / math.sqrt(2 * math.pi)
        cdf = ndtr(z)
        return (mu - a) * cdf + np.where(sd > 0, sd * phi, 0.0), cdf

    e0, p0 = above(i - 1.0)
    e1, p1 = above(i * 1.0)
    return ((e0 - e1) * disc).sum(-1), ((p0 - p1) * disc).sum(-1)


def true_scores(population: PairPopulation, measure: RankedMeasure, grades: np.ndarray) -> np.ndarray:
    """(runs,) each run's score with `grades` on every pair (the trec_eval value, averaged over turns)."""
    if measure.name == "AP":
        every = np.ones(population.size, dtype=bool)
        return np.array(
            [
                inferred_ap(population, run=r, sampled=every, grades=grades, rel=measure.rel, weights=None)
                for r in range(len(population.runs))
            ]
        )
    return np.asarray(turn_scores(population, measure, grades).mean(-1))


def turn_ap(
    population: PairPopulation,
    measure: RankedMeasure,
    grades: np.ndarray,
    pairs: np.ndarray,
    at: np.ndarray,
    weight: np.ndarray,
    n_turns: int,
) -> np.ndarray:
    """(runs, n_turns) each run's AP on each turn from `pairs` (indices), `at` their turn's position in
    0..n_turns-1, `weight` what each stands for in its turn's count of relevant pairs (1 in a census).
    The precision at each relevant retrieved pair needs every retrieved pair among `pairs`; a retrieved
    passage outside the pool counts as not relevant, as in trec_eval. The count of relevant pairs is
    estimated by the weights where only some of the turn's other pairs are drawn."""
    relevant = np.nan_to_num(grades[pairs], nan=-1.0) >= measure.rel
    count = np.bincount(at, weight * relevant, n_turns)
    out = np.zeros((len(population.runs), n_turns))
    for r in range(len(population.runs)):
        rank = population.rank[r, pairs]
        inside = np.flatnonzero(rank > 0)
        order = inside[np.lexsort((rank[inside], at[inside]))]
        hit = relevant[order].astype(float)
        running = np.cumsum(hit)
        start = np.searchsorted(at[order], at[order], side="left")
        above = running - np.concatenate([[0.0], running])[start]  # relevant at or above, within the turn
        precision = np.bincount(at[order], hit * above / rank[order], n_turns)
        out[r] = np.where(count > 0, precision / np.where(count > 0, count, 1.0), 0.0)
    return out


def turn_scores(population: PairPopulation, measure: RankedMeasure, grades: np.ndarray) -> np.ndarray:
    """(runs, turns) each run's nDCG@k, P@k or AP on each turn with `grades` on every pair."""
    t_count = len(population.turns)
    if measure.name == "AP":
        every = np.arange(population.size)
        return turn_ap(population, measure, grades, every, population.turn, np.ones(population.size), t_count)
    c = coefficients(population, measure)
    dcg = np.stack([np.bincount(population.turn, c_r * gain(grades, measure), t_count) for c_r in c])
    if measure.name == "P":
        return dcg
    levels = int(max(np.nanmax(grades), 1))
    counts = np.stack(
        [np.bincount(population.turn, (grades >= lv).astype(float), t_count) for lv in range(1, levels + 1)],
        -1,
    )
    ideal = ideal_curve(counts, measure.cutoff or 1)[0].sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ideal > 0, dcg / ideal, 0.0)


@dataclass
class Layout:
    """A stratified sample's shape: columns grouped by stratum; `sizes` N_h and `slices` of the columns."""

    strata: np.ndarray  # (N,) stratum of every pair
    sizes: np.ndarray  # (H,)
    slices: list[slice]

    @property
    def drawn(self) -> np.ndarray:
        return np.array([s.stop - s.start for s in self.slices])

    def weights(self) -> np.ndarray:
        """(n,) N_h / n_h of every column."""
        return np.concatenate(
            [
                np.full(s.stop - s.start, n / max(s.stop - s.start, 1))
                for s, n in zip(self.slices, self.sizes, strict=True)
            ]
        )

    def column_strata(self) -> np.ndarray:
        return np.concatenate([np.full(s.stop - s.start, h) for h, s in enumerate(self.slices)])


def layout_for(strata: np.ndarray, counts: np.ndarray) -> Layout:
    """The layout of samples drawing counts[h] pairs from stratum h."""
    sizes = np.bincount(strata, minlength=len(counts))
    ends = np.cumsum(counts)
    return Layout(
        strata=strata,
        sizes=sizes,
        slices=[slice(int(e - c), int(e)) for e, c in zip(ends, counts, strict=True)],
    )


@dataclass
class RankedEstimates:
    estimate: np.ndarray  # (runs, R)
    se: np.ndarray  # (runs, R)
    lam: np.ndarray  # (runs, R, H)
    residuals: np.ndarray  # (runs, R, n) each drawn pair's linearised residual (`stratified_se`)


class _Run:
    """One run's estimator over R samples: the per-(stratum, turn) sums that do not depend on the sample."""

    def __init__(
        self,
        population: PairPopulation,
        measure: RankedMeasure,
        layout: Layout,
        idx: np.ndarray,
        y: np.ndarray,
        c: np.ndarray,
        levels: int,
    ) -> None:
        self.measure, self.layout, self.levels = measure, layout, levels
        self.reps, self.n = idx.shape
        self.big_h, self.big_t = len(layout.sizes), len(population.turns)
        m = population.machine
        self.t_s, self.c_s, self.y, self.m = population.turn[idx], c[idx], y, m[idx]
        self.h_col = layout.column_strata()
        self.w = layout.weights()

        def pop(values: np.ndarray) -> np.ndarray:
            return np.bincount(
                layout.strata * self.big_t + population.turn, values, self.big_h * self.big_t
            ).reshape(self.big_h, self.big_t)

        # Features: the gain (times the run's weight c, for the DCG or P@k) and, for nDCG, [grade >= l].
        self.sum_c, self.sum_cm = pop(c), pop(c * gain(m, measure))
        self.lv = range(1, levels + 1) if measure.name == "nDCG" else range(0)
        self.count = pop(np.ones_like(m))
        self.sum_ml = [pop((m >= v).astype(float)) for v in self.lv]

    def _wmean(self, values: np.ndarray) -> np.ndarray:
        return np.asarray((values * self.w).sum(1) / self.w.sum())

    def _fit(self, method: str, y_f: np.ndarray, m_f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(alpha (R, H), beta (R,)): the prediction alpha_h + beta * feature(machine) of a feature."""
        if method == "strat-ppi++":
            alpha = np.stack([y_f[:, s].mean(1) for s in self.layout.slices], 1)
            return alpha, np.zeros(self.reps)
        beta = self.lam if method == "ppi++" else np.zeros(self.reps)
        alpha = self._wmean(y_f) - beta * self._wmean(m_f)
        return np.repeat(alpha[:, None], self.big_h, 1), beta

    def run(self, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g_y, g_m = gain(self.y, self.measure), gain(self.m, self.measure)
        rows = np.arange(self.reps)[:, None]
        if method == "ppi++":
            # Power tuning on the gains: the design-weighted regression slope of human on machine, in [0, 1].
            dy, dm = g_y - self._wmean(g_y)[:, None], g_m - self._wmean(g_m)[:, None]
            cov, var = self._wmean(dy * dm), self._wmean(dm * dm)
            with np.errstate(divide="ignore", invalid="ignore"):
                self.lam = np.clip(np.where(var > 0, cov / var, 0.0), 0.0, 1.0)
        alpha, beta = self._fit(method, g_y, g_m)
        dcg = alpha @ self.sum_c + beta[:, None] * self.sum_cm.sum(0)
        pred_g = alpha[:, self.h_col] + beta[:, None] * g_m
        resid_d = self.c_s * (g_y - pred_g)
        # The drawn pairs enter the plug-in with their human grades (so a census is exact), and the
        # correction below weights their residuals by w - 1 rather than w.
        flat = (rows * self.big_t + self.t_s).ravel()

        def by_turn(values: np.ndarray) -> np.ndarray:
            return np.bincount(flat, values.ravel(), self.reps * self.big_t).reshape(self.reps, self.big_t)

        dcg = dcg + by_turn(resid_d)
        if self.measure.name != "nDCG":
            e = resid_d / self.big_t
            score = dcg.mean(-1)
        else:
            counts, resid_l, spreads = [], [], []
            for v, sum_ml in zip(self.lv, self.sum_ml, strict=True):
                i_y, i_m = (self.y >= v).astype(float), (self.m >= v).astype(float)
                a_l, b_l = self._fit(method, i_y, i_m)
                pred_l = a_l[:, self.h_col] + b_l[:, None] * i_m
                resid_l.append(i_y - pred_l)
                counts.append(a_l @ self.count + b_l[:, None] * sum_ml.sum(0) + by_turn(resid_l[-1]))
                p1, p0 = np.clip(a_l + b_l[:, None], 0, 1), np.clip(a_l, 0, 1)
                p_s = np.clip(pred_l, 0, 1)
                spreads.append(
                    p1 * (1 - p1) @ sum_ml + p0 * (1 - p0) @ (self.count - sum_ml) - by_turn(p_s * (1 - p_s))
                )
            value, slope = expected_ideal_curve(
                np.stack(counts, -1), np.stack(spreads, -1), self.measure.cutoff or 1
            )
            ideal = value.sum(-1)
            ok = ideal > 0
            safe = np.where(ok, ideal, 1.0)
            a = np.where(ok, 1.0 / safe, 0.0)
            b = np.where(ok[..., None], -(dcg / safe**2)[..., None] * slope, 0.0)
            score = np.where(ok, dcg / safe, 0.0).mean(-1)
            e = a[rows, self.t_s] * resid_d
            for i, r_l in enumerate(resid_l):
                e = e + b[rows, self.t_s, i] * r_l
            e = e / self.big_t
        # The one-step correction: the linearised residuals, weighted up by the design.
        score = score + (e * (self.w - 1)).sum(1)
        self.residuals = e
        lam = np.repeat((beta if method == "ppi++" else np.zeros(self.reps))[:, None], self.big_h, 1)
        return score, stratified_se(e, self.layout), lam


def stratified_se(e: np.ndarray, layout: Layout) -> np.ndarray:
    """(R,) the standard error of a total of linearised residuals `e` (R, n) drawn without replacement
    within `layout`'s strata; the difference of two runs' estimates has its residuals' difference."""
    s2 = np.zeros((e.shape[0], len(layout.sizes)))
    for h, s in enumerate(layout.slices):
        if s.stop - s.start >= 2:
            s2[:, h] = e[:, s].var(1, ddof=1)
    thin = layout.drawn < 2
    if thin.any() and (~thin).any():
        # A stratum with one drawn pair shows no spread: lend it the largest the others show.
        s2[:, thin] = s2[:, ~thin].max(1, keepdims=True)
    n = layout.drawn.astype(float)
    big = layout.sizes.astype(float)
    factor = np.where(n > 0, big**2 * (1 - n / big) / np.maximum(n, 1), 0.0)
    return np.asarray(np.sqrt((s2 * factor).sum(1)))


def ranked_estimates(
    *,
    population: PairPopulation,
    measure: RankedMeasure,
    layout: Layout,
    idx: np.ndarray,
    y: np.ndarray,
    method: str,
    runs: list[int] | None = None,
) -> RankedEstimates:
    """Every run's estimate and standard error from R samples at once.

    `idx` (R, n): the drawn pairs of each sample, columns grouped by stratum as `layout` says; `y` (R, n):
    their human grades. The machine grade of every pair is `population.machine`.
    """
    if method not in PAIR_METHODS:
        raise EstimationError(f"method must be one of {', '.join(PAIR_METHODS)}, not {method!r}")
    if measure.name == "AP":
        raise EstimationError("AP from a pair sample is estimated by two_stage, from a two-stage sample only")
    c = coefficients(population, measure)
    levels = int(max(np.nanmax(population.machine), np.nanmax(y), 1))
    chosen = range(len(population.runs)) if runs is None else runs
    est, se, lams, residuals = [], [], [], []
    for r in chosen:
        one = _Run(population, measure, layout, idx, y, c[r], levels)
        e, s, lam = one.run(method)
        est.append(e)
        se.append(s)
        lams.append(lam)
        residuals.append(one.residuals)
    return RankedEstimates(np.array(est), np.array(se), np.array(lams), np.array(residuals))


def sample_layout(
    population: PairPopulation, drawn: np.ndarray, strata: np.ndarray | None = None
) -> tuple[Layout, np.ndarray]:
    """(layout, idx (1, n)) of one sample: `drawn` indices, regrouped by the stratum each pair was drawn
    from (`strata` (N,); None: its machine grade's)."""
    if strata is None:
        strata, _names = stratum_of(population.machine)
    order = np.argsort(strata[drawn], kind="stable")
    idx = np.asarray(drawn)[order]
    counts = np.bincount(strata[idx], minlength=int(strata.max()) + 1)
    return layout_for(strata, counts), idx[None, :]


def uniform_layout(population: PairPopulation, drawn: np.ndarray) -> tuple[Layout, np.ndarray]:
    """A uniform pair sample: one stratum holding every pair."""
    strata = np.zeros(population.size, dtype=np.int64)
    return layout_for(strata, np.array([len(drawn)])), np.asarray(drawn)[None, :]


NDCG_REFUSED = (
    "nDCG@k from a pair sample is not offered by a single-stage design: its ideal DCG needs each turn's "
    "count of highly graded pairs, which a few drawn pairs per turn do not pin down, and every estimator of it tried ran low "
    "by more than its own spread on the iKAT 2024 qrels (bench/bench_ndcg_pairs.py, docs/statistics.md): at "
    "1,000 pairs the ideal from the strata's prediction by up to 0.10, with an empirical-Bayes turn richness "
    "by 0.09, the shipped one-step estimator by 0.07 (0.06 after a jackknife correction); a latent-class "
    "grade mix per turn kept within 0.012 at 1,000 pairs but ran low by 0.03 at 2,000, twice its spread. "
    "Draw a two-stage sample instead (sample_for_humans --unit pair --design two-stage --measure nDCG@k: "
    "turns, then every pair some run ranks within the cutoff in each drawn turn; on the same qrels its bias "
    "stays within 0.005 and it is about 3x narrower than whole turns), or sample whole turns (--unit turn)"
)


def is_ranked(measure: str) -> bool:
    """Whether `measure` is one a pair sample estimates per run (nDCG@k, P@k, AP); nDCG is then refused
    with `NDCG_REFUSED` by `check_offered`."""
    try:
        parse_ranked(measure)
    except EstimationError:
        return False
    return True


AP_REFUSED = (
    "AP from a single-stage pair sample is not offered: its estimator, inferred AP (trec_eval's infAP), "
    "runs far low at the sampling rates people afford, with tight intervals: on the iKAT 2024 qrels its "
    "95% interval covered the run's AP in none of the samples of 500 pairs (of 20,575), nor for the worst "
    "run at 5,000. Draw a two-stage sample instead (sample_for_humans --unit pair --design two-stage "
    "--measure AP: turns, then every pair some run retrieves in each drawn turn, which makes each drawn "
    "turn's AP exact; docs/statistics.md), or sample whole turns (--unit turn)"
)


def check_offered(measure: RankedMeasure, *, two_stage: bool = False) -> None:
    """nDCG@k and AP are offered from a two-stage sample only."""
    if measure.name == "nDCG" and not two_stage:
        raise EstimationError(NDCG_REFUSED)
    if measure.name == "AP" and not two_stage:
        raise EstimationError(AP_REFUSED)


def sample_strata(population: PairPopulation, sample_measure: str) -> np.ndarray:
    """Every pair's stratum as `sample_for_humans --design stratified` drew it: the machine's grade, split
    by rank band when the sample was drawn for a per-run measure. Within a grade the pairs some run ranks
    in its top k are drawn far more often than the rest, so weighting them alike would misstate P@k."""
    measure = parse_ranked(sample_measure) if is_ranked(sample_measure) else None
    value = design_value(population, measure) if measure is not None else None
    return design_strata(population.machine, value=value)[0]


def informative_pairs(population: PairPopulation, measure: RankedMeasure, drawn: np.ndarray) -> np.ndarray:
    """(runs,) drawn pairs that fall in each run's ranking within the cutoff: the ones that move its score."""
    if measure.cutoff is None:
        return np.asarray((population.rank[:, drawn] > 0).sum(1))
    return np.asarray((coefficients(population, measure)[:, drawn] > 0).sum(1))


def total_inside(population: PairPopulation, measure: RankedMeasure) -> np.ndarray:
    return informative_pairs(population, measure, np.arange(population.size))


def informative_warning(count: int, measure: RankedMeasure) -> str | None:
    """Below `MIN_UNITS` drawn pairs in a run's ranking (within the cutoff) the interval's coverage was not
    shown to hold: the few pairs that move the score decide it."""
    if count >= MIN_UNITS:
        return None
    where = f"top {measure.cutoff}" if measure.cutoff else "ranking"
    return (
        f"coverage not shown to hold at {plural(count, 'drawn pair')} in the run's {where} (fewer than "
        f"{MIN_UNITS}): treat the interval as a rough guide"
    )
