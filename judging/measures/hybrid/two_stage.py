"""The two-stage pair design: sample turns, then pairs inside each sampled turn; nDCG@k, P@k and AP per run.

A single-stage pair sample gives each turn a handful of labels, too few to pin its ideal DCG, and every
estimator of the ideal tried ran low by more than its spread (docs/statistics.md). Two stages put the
labels where a turn's score is decided:

* stage 1 draws `turns` of the T turns uniformly without replacement;
* stage 2, inside a drawn turn, takes a census of the pairs some run ranks within the cutoff (they hold
  every run's DCG@k or P@k, and most of the turn's highly graded pairs, so most of its ideal DCG) and, for
  nDCG, draws a few of the turn's other pairs within strata of the machine's grade (at least one per
  grade present, more towards the high grades) for the counts of each grade that the ideal DCG still
  needs.

Inside a drawn turn the run's DCG is then exact and the ideal DCG comes from the census plus the
design-weighted counts of the rest, so the turn's nDCG is nearly exact. Across turns the machine's nDCG,
known on every turn, is the control variate (PPI++ at the turn level): the estimate is
lam * mean over all turns of the machine's nDCG + mean over the drawn turns of (estimated human nDCG -
lam * machine nDCG), with lam tuned on the drawn turns. The interval is Student's t on the drawn turns'
residuals: the two-stage ultimate-cluster variance, whose between-turn spread already holds the within-turn
error. For P@k, exact in each drawn turn, it carries the finite-population correction 1 - n/T; nDCG@k and
AP estimate part of each drawn turn (the ideal DCG, the count of relevant pairs), and the correction would
scale that error away too (nDCG@5 then covered 0.78 for the worst run with 87 of 116 turns drawn). A run
whose drawn turn scores sit mostly at 0 or 1 shows less spread than its turns have, and t undercovers it:
its interval takes in Waudby-Smith and Ramdas' betting interval, valid for bounded values at any n
(`intervals.betting_interval`; docs/statistics.md has the figures).

AP: the census of a drawn turn is every pair some run retrieves, so the precision at each relevant
retrieved pair is exact, and the turn's count of relevant pairs is the census's plus the weighted rest;
with every pair drawn it is trec_eval's AP.

Pairs per turn: the turn-level spread dominates (on the iKAT 2024 qrels the residual's sd across turns is
0.06-0.18, the within-turn error of a census of the top k plus one pair per grade far less), so the
design spends the budget on turns and takes the fewest other pairs that keep every pair's probability
positive: one per machine grade present, and whatever is left of the budget spread over the drawn turns.
bench/bench_ndcg_two_stage.py measures the trade-off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.wording import plural
from judging.measures.hybrid.estimators import EstimationError
from judging.measures.hybrid.figures import method_figures
from judging.measures.hybrid.intervals import betting_interval, interval_ends
from judging.measures.hybrid.pairs import PairPopulation
from judging.measures.hybrid.ranked import (
    RankedMeasure,
    coefficients,
    gain,
    ideal_curve,
    parse_ranked,
    true_scores,
    turn_ap,
    turn_scores,
)
from judging.measures.hybrid.sampling import SamplingError
from judging.measures.hybrid.simulation import SimulationResult

TWO_STAGE_METHODS = ("classical", "ppi++")
# The measures whose turn score needs the turn's pairs outside every run's ranking (the ideal DCG, AP's
# count of relevant pairs): a drawn turn also draws a few of those.
SAMPLES_REST = ("nDCG", "AP")
BOUNDARY_SHARE = 0.5
MIN_TURNS = 20  # below this many drawn turns, the interval's coverage was not shown to hold
CENSUS = "census"  # the stratum name of a drawn turn's pairs within some run's cutoff
# The other pairs of a drawn turn are drawn within machine grades, this much more often the higher the
# grade: a grade-3 or 4 pair outside every top k is what the census may miss of the ideal DCG.
GRADE_WEIGHT = (1.0, 1.0, 2.0, 3.0, 3.0)


def census_pairs(population: PairPopulation, measure: RankedMeasure) -> np.ndarray:
    """(N,) whether some run ranks the pair within the measure's cutoff (AP: retrieves it at all)."""
    if measure.name == "AP":
        return np.asarray((population.rank > 0).any(0))
    return np.asarray((coefficients(population, measure) > 0).any(0))


def within_strata(population: PairPopulation, measure: RankedMeasure) -> np.ndarray:
    """(N,) each pair's stratum inside its turn: 0 for the census, 1 + machine grade for the rest."""
    grade = np.clip(population.machine, 0, len(GRADE_WEIGHT) - 1).astype(np.int64)
    return np.where(census_pairs(population, measure), 0, 1 + grade)


def stratum_names(strata: np.ndarray) -> list[str]:
    return [CENSUS if s == 0 else f"m={int(s) - 1}" for s in strata]


def turns_for(population: PairPopulation, measure: RankedMeasure, budget: int) -> int:
    """How many turns a budget of human pairs buys: the mean cost of a turn is its census plus, for nDCG,
    one pair per machine grade among its other pairs."""
    t_count = len(population.turns)
    strata = within_strata(population, measure)
    census = np.bincount(population.turn, strata == 0, t_count)
    if measure.name in SAMPLES_REST:
        present = np.zeros((t_count, int(strata.max()) + 1), dtype=bool)
        present[population.turn, strata] = True
        census = census + present[:, 1:].sum(1)
    return int(min(t_count, max(budget // max(math.ceil(float(census.mean())), 1), 2)))


@dataclass(frozen=True)
class Frame:
    """What every draw and estimate of one population and measure reuses."""

    coef: np.ndarray  # (runs, N) each pair's weight in a run's DCG@k or P@k
    strata: np.ndarray  # (N,) `within_strata`
    members: list[np.ndarray]  # each turn's pairs


def frame_for(population: PairPopulation, measure: RankedMeasure) -> Frame:
    order = np.argsort(population.turn, kind="stable")
    ends = np.cumsum(np.bincount(population.turn, minlength=len(population.turns)))
    return Frame(
        coef=coefficients(population, measure),
        strata=within_strata(population, measure),
        members=np.split(order, ends[:-1]),
    )


@dataclass(frozen=True)
class TwoStageDraw:
    chosen: np.ndarray  # pair indices
    probability: np.ndarray  # P(turn) x P(pair | turn) of each chosen pair
    stratum: list[str]
    turns: np.ndarray  # indices of the drawn turns


def two_stage_draw(
    *,
    population: PairPopulation,
    measure: RankedMeasure,
    budget: int,
    rng: np.random.Generator,
    turns: int | None = None,
    frame: Frame | None = None,
) -> TwoStageDraw:
    """Draw the turns, then each drawn turn's census and its other pairs (for nDCG; P@k needs only the
    census): the budget left after the censuses is spread evenly over the drawn turns, at least one pair
    per machine grade present, within a turn's grades in proportion to their size times `GRADE_WEIGHT`."""
    t_count = len(population.turns)
    n_t = turns_for(population, measure, budget) if turns is None else turns
    if not 2 <= n_t <= t_count:
        raise SamplingError(
            f"a two-stage sample needs between 2 turns and the {plural(t_count, 'turn')}, not {n_t}"
        )
    frame = frame or frame_for(population, measure)
    strata = frame.strata
    drawn_turns = np.sort(rng.choice(t_count, n_t, replace=False))
    members = [frame.members[t] for t in drawn_turns]
    census = [m[strata[m] == 0] for m in members]
    left = max(budget - sum(len(c) for c in census), 0) if measure.name in SAMPLES_REST else 0
    share = np.full(n_t, left // n_t) + (np.arange(n_t) < left % n_t)
    p_turn = n_t / t_count
    chosen, probability = [np.concatenate(census)], [np.full(sum(len(c) for c in census), p_turn)]
    if measure.name in SAMPLES_REST:
        # Each (turn, grade) cell draws its count without replacement: the pairs with the smallest
        # random keys within the cell.
        rest = np.concatenate([m[strata[m] > 0] for m in members])
        where = np.repeat(np.arange(n_t), [int((strata[m] > 0).sum()) for m in members])
        grades = len(GRADE_WEIGHT)
        cell = where * grades + strata[rest] - 1
        sizes = np.bincount(cell, minlength=n_t * grades).reshape(n_t, grades).astype(float)
        counts = np.stack(
            [_spread(int(e), z, z * np.array(GRADE_WEIGHT)) for e, z in zip(share, sizes, strict=True)]
        ).ravel()
        order = np.lexsort((rng.random(len(rest)), cell))
        starts = np.concatenate([[0], np.cumsum(sizes.ravel())[:-1]]).astype(np.int64)
        rank = np.arange(len(rest)) - starts[cell[order]]
        take = order[rank < counts[cell[order]]]
        chosen.append(rest[take])
        probability.append(p_turn * counts[cell[take]] / sizes.ravel()[cell[take]])
    picked = np.concatenate(chosen)
    return TwoStageDraw(
        chosen=picked,
        probability=np.concatenate(probability),
        stratum=stratum_names(strata[picked]),
        turns=drawn_turns,
    )


def two_stage_keys(
    *, population: PairPopulation, keys: list[str], measure: str, budget: int, seed: int | None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(positions in `keys` of the drawn pairs, their inclusion probabilities, their strata): the draw
    over the pairs of `population` that `keys` names (a pool's), for `sample_for_humans`."""

    try:
        parsed = parse_ranked(measure)
    except EstimationError:
        parsed = None
    if parsed is None:
        raise SamplingError(
            f"the two-stage design serves nDCG@k, P@k and AP (give --measure), not {measure!r}"
        )
    wanted = set(keys)
    population = population.only(np.array([k in wanted for k in population.keys]))
    draw = two_stage_draw(
        population=population, measure=parsed, budget=budget, rng=np.random.default_rng(seed)
    )
    position = {k: i for i, k in enumerate(keys)}
    return np.array([position[population.keys[j]] for j in draw.chosen]), draw.probability, draw.stratum


def _spread(extra: int, sizes: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """`extra` pairs over a turn's machine grades in proportion to `weight`, at least one per grade
    present (every pair's probability stays positive), at most its size; largest remainders first."""
    target = extra * weight / weight.sum() if weight.sum() > 0 else np.zeros(len(sizes))
    counts: np.ndarray = np.minimum(np.maximum(np.floor(target), np.minimum(sizes, 1)), sizes).astype(
        np.int64
    )
    for g in np.argsort(-(target - counts), kind="stable"):
        if counts.sum() >= extra:
            break
        counts[g] += counts[g] < sizes[g]
    for g in np.argsort(-(sizes - counts), kind="stable"):
        counts[g] += max(min(extra - int(counts.sum()), int(sizes[g] - counts[g])), 0)
    return counts


def drawn_turn_scores(
    population: PairPopulation,
    measure: RankedMeasure,
    drawn: np.ndarray,
    turns: np.ndarray,
    frame: Frame | None = None,
) -> tuple[np.ndarray, int]:
    """((runs, drawn turns) each drawn turn's estimated human score, within-turn strata of the drawn turns
    left without a graded pair). `drawn`: the drawn pairs with a human grade;
    inside a turn each stratum's graded pairs stand for all of its pairs (weight N / n), so a census is
    exact and a missing label is assumed missing at random within its stratum."""
    frame = frame or frame_for(population, measure)
    strata = frame.strata
    t_count, cells = len(population.turns), len(GRADE_WEIGHT) + 1
    cell = population.turn * cells + strata
    size = np.bincount(cell, minlength=t_count * cells)
    seen = np.bincount(cell[drawn], minlength=len(size))
    position = np.full(t_count, -1)
    position[turns] = np.arange(len(turns))
    big, small = size.reshape(t_count, cells)[turns], seen.reshape(t_count, cells)[turns]
    empty = int(((big > 0) & (small == 0)).sum())
    w = size[cell[drawn]] / seen[cell[drawn]]
    at = position[population.turn[drawn]]
    y = population.human[drawn]
    c = frame.coef[:, drawn]
    if measure.name == "AP":
        return turn_ap(population, measure, population.human, drawn, at, w, len(turns)), empty
    dcg = np.stack([np.bincount(at, row * w * gain(y, measure), len(turns)) for row in c])
    if measure.name == "P":
        return dcg, empty
    levels = int(max(np.nanmax(population.human), np.nanmax(population.machine), 1))
    counts = np.stack([np.bincount(at, w * (y >= lv), len(turns)) for lv in range(1, levels + 1)], -1)
    ideal = ideal_curve(counts, measure.cutoff or 1)[0].sum(-1)
    return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0), empty


@dataclass(frozen=True)
class TurnLevel:
    estimate: np.ndarray  # (runs,)
    se: np.ndarray  # (runs,)
    lam: np.ndarray  # (runs,)
    df: int
    resid: np.ndarray  # (runs, n) each drawn turn's human score minus lam times the machine's
    total: int  # T, the turns drawn from
    boundary: np.ndarray  # (runs,) `at_boundary` of the drawn turns' human scores


def turn_level(
    *,
    human: np.ndarray,
    machine_drawn: np.ndarray,
    machine_all: np.ndarray,
    method: str,
) -> TurnLevel:
    """The turn-level estimate over the drawn turns: `human` (runs, n) their estimated human scores,
    `machine_drawn` (runs, n) the machine's on them, `machine_all` (runs, T) the machine's on every turn."""
    if method not in TWO_STAGE_METHODS:
        raise EstimationError(
            f"a two-stage sample's methods are {', '.join(TWO_STAGE_METHODS)}, not {method!r}"
        )
    n = human.shape[1]
    if n < 2:
        raise EstimationError(f"an interval needs at least 2 drawn turns, got {n}")
    lam = np.zeros(len(human))
    if method == "ppi++":
        dm = machine_drawn - machine_drawn.mean(1, keepdims=True)
        cov = ((human - human.mean(1, keepdims=True)) * dm).sum(1)
        var = (dm * dm).sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.clip(np.where(var > 0, cov / var, 0.0), 0.0, 1.0)
    resid = human - lam[:, None] * machine_drawn
    estimate = lam * machine_all.mean(1) + resid.mean(1)
    return TurnLevel(
        estimate,
        resid.std(1, ddof=1) / math.sqrt(n),
        lam,
        n - 1,
        resid,
        machine_all.shape[1],
        at_boundary(human),
    )


def at_boundary(human: np.ndarray) -> np.ndarray:
    """(runs,) whether a run's drawn turn scores sit at 0 or 1: at least `BOUNDARY_SHARE` of them at one
    end. Student's t rests on the spread the sample shows, and such a sample rarely shows the few turns
    that pull the mean off the end, so its interval undercovers (docs/statistics.md)."""
    n = max(human.shape[1], 1)
    top = (human >= 1 - 1e-9).sum(1) / n
    bottom = (human <= 1e-9).sum(1) / n
    return np.asarray(np.maximum(top, bottom) >= BOUNDARY_SHARE)


def two_stage_warning(turns: int, total: int) -> str | None:
    """What the turn-level interval needs said: below `MIN_TURNS` drawn turns its coverage was not shown
    to hold."""
    if turns >= MIN_TURNS or turns >= total:
        return None
    return (
        f"coverage not shown to hold with {plural(turns, 'drawn turn')} (fewer than {MIN_TURNS}): the "
        "interval rests on the spread across turns; treat it as a rough guide"
    )


def check_two_stage_turns(measure: RankedMeasure, turns: int, total: int) -> None:
    """AP is refused below `MIN_TURNS` drawn turns: its per-turn values spread widely (a turn's AP is often
    0 or 1), and below that the simulation did not show its interval to cover."""
    if measure.name == "AP" and turns < min(MIN_TURNS, total):
        raise EstimationError(
            f"AP from a two-stage sample needs at least {plural(MIN_TURNS, 'drawn turn')} with a human grade, "
            f"got {turns}: below that its interval's coverage was not shown (docs/statistics.md); each drawn "
            "turn costs the pairs the runs retrieve in it, so draw a larger budget or sample whole turns"
        )


# The shipped interval's worst-run coverage from 20 drawn turns up, with a near-perfect and a near-zero run
# among seven (bench/bench_intervals_boundary.py on the iKAT 2024 qrels, 200 draws a cell).
BOUNDARY_COVERAGE = {"nDCG": 0.94, "P": 0.93, "AP": 0.95}


def boundary_warning(measure: RankedMeasure) -> str:
    """What a run `at_boundary` gets said: Student's t alone undercovers it, so its interval is widened."""
    return (
        "most drawn turns score at 0 or 1 for this run: Student's t alone undercovers such a run (a "
        "near-perfect run's covered 0.85 at 20 drawn turns on the iKAT 2024 qrels), so its interval takes "
        "in a betting interval for bounded values, wider; simulated coverage with it "
        f"{BOUNDARY_COVERAGE.get(measure.name, 0.93):.2f} for the worst run (docs/statistics.md)"
    )


def check_two_stage_methods(methods: Sequence[str]) -> None:
    unknown = [m for m in methods if m not in TWO_STAGE_METHODS]
    if unknown:
        raise EstimationError(
            f"a two-stage sample's methods are {', '.join(TWO_STAGE_METHODS)}, not {', '.join(unknown)}"
        )


INTERVALS = ("t", "t-fpc", "betting", "boundary")


def two_stage_intervals(
    *, got: TurnLevel, alpha: float, census: bool = False, interval: str = "boundary", exact: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, lo, hi) per run, clipped to [0, 1]. `interval`:

    * t: Student's t on the drawn turns' residuals, no finite-population correction;
    * t-fpc: the same with the correction (1 - n/T) on the variance: the turns are drawn without
      replacement and, each drawn turn's score being (nearly) exact, the between-turn spread is the whole
      variance;
    * betting: `intervals.betting_interval` on the residuals, valid for bounded values at any n;
    * boundary (shipped): t-fpc where each drawn turn's score is `exact` (P@k: the census holds every
      pair it counts), t elsewhere (nDCG@k's ideal DCG and AP's count of relevant pairs are estimated
      within the turn, an error the correction would scale away: with it nDCG@5 covered 0.78 for the
      worst run at 87 of 116 turns), and for a run `at_boundary` the hull of that and betting.
    """
    if interval not in INTERVALS:
        raise EstimationError(f"interval must be one of {', '.join(INTERVALS)}, not {interval!r}")
    n = got.df + 1
    corrected = interval == "t-fpc" or (interval == "boundary" and exact)
    fpc = math.sqrt(max(1 - n / got.total, 0.0)) if corrected else 1.0
    est, lo, hi, _wilson = interval_ends(
        estimate=got.estimate,
        se=got.se * fpc,
        se_srs=got.se * fpc,
        n=got.df + 1,
        binary=False,
        identical=False,
        census=census,
        alpha=alpha,
        bounds=(0.0, 1.0),
    )
    if interval in ("betting", "boundary") and not census:
        use = np.ones(len(est), dtype=bool) if interval == "betting" else got.boundary
        if use.any():
            b_lo, b_hi = _betting(got, alpha, use)
            lo = np.where(use, np.minimum(b_lo, lo) if interval == "boundary" else b_lo, lo)
            hi = np.where(use, np.maximum(b_hi, hi) if interval == "boundary" else b_hi, hi)
            lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
    return est, lo, hi


def _betting(got: TurnLevel, alpha: float, use: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`betting_interval` on the chosen runs' residuals, rescaled from [-lam, 1] to [0, 1] and back, in a
    fixed random order (any order not chosen from the values is valid; the turns' own order may not be)."""
    lam = got.lam[use]
    order = np.random.default_rng(0).permutation(got.resid.shape[1])
    scaled = (got.resid[use][:, order] + lam[:, None]) / (1 + lam[:, None])
    lo_x, hi_x = betting_interval(scaled, population=got.total, alpha=alpha)
    shift = got.estimate[use] - got.resid[use].mean(1)  # lam times the machine's mean over every turn
    lo, hi = np.zeros(len(use)), np.ones(len(use))
    lo[use] = shift + lo_x * (1 + lam) - lam
    hi[use] = shift + hi_x * (1 + lam) - lam
    return lo, hi


def simulate_two_stage(
    *,
    population: PairPopulation,
    measure: RankedMeasure,
    budgets: Sequence[int],
    repeats: int,
    seed: int = 0,
    alpha: float = 0.05,
    methods: Sequence[str] = TWO_STAGE_METHODS,
    turns: int | None = None,
    interval: str = "boundary",
) -> SimulationResult:
    """Coverage and width of the two-stage design's intervals for every run and budget (human pairs), as
    `pair_simulation.simulate_pairs` reports them; `width_ratio` is against classical (the drawn turns'
    estimated human scores alone). `turns` fixes the number of drawn turns (the bench's trade-off)."""
    if np.isnan(population.human).any():
        raise EstimationError("the simulation needs a human grade on every pair (use population.complete())")
    check_two_stage_methods(methods)
    big_n = population.size
    bad = [b for b in budgets if not 2 <= b <= big_n]
    if bad:
        raise EstimationError(f"budgets must lie between 2 and the {plural(big_n, 'pair')}, not {bad}")
    truth = true_scores(population, measure, population.human)
    machine_all = turn_scores(population, measure, population.machine)
    rng = np.random.default_rng(seed)
    k = len(population.runs)
    result = SimulationResult(
        units=big_n,
        runs=k,
        repeats=repeats,
        alpha=alpha,
        seed=seed,
        fpc=interval == "t-fpc" or (interval == "boundary" and measure.name == "P"),
    )
    wanted = list(dict.fromkeys(["classical", *methods]))
    frame = frame_for(population, measure)
    for budget in sorted(set(budgets)):
        n_t = turns_for(population, measure, budget) if turns is None else turns
        hits = {m: np.zeros(k) for m in wanted}
        widths = {m: np.zeros(k) for m in wanted}
        labelled = 0
        for _ in range(repeats):
            draw = two_stage_draw(
                population=population, measure=measure, budget=budget, rng=rng, turns=n_t, frame=frame
            )
            labelled += len(draw.chosen)
            human, _empty = drawn_turn_scores(population, measure, draw.chosen, draw.turns, frame)
            for method in wanted:
                got = turn_level(
                    human=human,
                    machine_drawn=machine_all[:, draw.turns],
                    machine_all=machine_all,
                    method=method,
                )
                _est, lo, hi = two_stage_intervals(
                    got=got,
                    alpha=alpha,
                    census=len(draw.chosen) == big_n,
                    interval=interval,
                    exact=measure.name == "P",
                )
                hits[method] += (lo - 1e-12 <= truth) & (truth <= hi + 1e-12)
                widths[method] += hi - lo
        warning = two_stage_warning(n_t, len(population.turns))
        if warning:
            result.warnings[budget] = warning
        result.draws[budget] = {"turns": n_t, "pairs": labelled / repeats}
        result.budgets[budget] = method_figures(
            hits={m: hits[m] for m in methods}, widths=widths, repeats=repeats, warning=warning
        )
    return result
