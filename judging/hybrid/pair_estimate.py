"""Each run's nDCG@k, P@k or AP from a pair sample (`sample_for_humans --unit pair`), for `estimate`.

The population is every pair the machine judge graded; the human grades count on the sample's drawn pairs
only (each with its stratum's probability), or, without a sample, on every human-graded pair treated as a
uniform sample, which the result says. nDCG@k and P@k come from `ranked` (classical, ppi++ or
strat-ppi++). A two-stage sample (turns, then pairs) is estimated by `two_stage` at the turn level,
nDCG@k and AP included; those two are refused from a single-stage sample (`ranked.check_offered`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from annotation.models import Collection, Judge, Run
from annotation.selectors import qrels_dict, runs_dict
from core.wording import plural
from judging.measures.hybrid.coverage import Coverage, pair_coverage
from judging.measures.hybrid.estimate import UNSAMPLED_NOTE, HybridEstimate, add_pairs
from judging.measures.hybrid.estimators import Estimate, EstimationError
from judging.measures.hybrid.intervals import interval_ends
from judging.measures.hybrid.pairs import PairPopulation, pair_population
from judging.measures.hybrid.ranked import (
    PAIR_METHODS,
    RankedMeasure,
    check_offered,
    informative_pairs,
    informative_warning,
    is_ranked,
    parse_ranked,
    ranked_estimates,
    sample_layout,
    sample_strata,
    stratified_se,
    total_inside,
    turn_scores,
    uniform_layout,
)
from judging.measures.hybrid.two_stage import (
    TWO_STAGE_METHODS,
    boundary_warning,
    check_two_stage_turns,
    drawn_turn_scores,
    turn_level,
    two_stage_intervals,
    two_stage_warning,
)
from judging.models import HumanSample


def pair_population_for(*, collection: Collection, human: Sequence[Judge], machine: Judge) -> PairPopulation:
    """The pairs the machine graded, the human grades on them (the first judge's where several graded a
    pair), and every run's ranking."""
    machine_q = qrels_dict(collection=collection, judge=machine)
    if not machine_q:
        raise EstimationError(f"machine judge {machine.name} has no relevance labels on {collection.name}")
    human_q: dict[str, dict[str, int]] = {}
    for judge in reversed(list(human)):
        for turn, grades in qrels_dict(collection=collection, judge=judge).items():
            human_q.setdefault(turn, {}).update(grades)
    runs = list(Run.objects.filter(collection=collection).order_by("name"))
    if not runs:
        raise EstimationError(f"collection {collection.name} has no runs")
    by_run = runs_dict(runs=runs, turn_ids=list(machine_q))
    rankings = {run.name: by_run.get(run.pk, {}) for run in runs}
    return pair_population(machine=machine_q, human=human_q, rankings=rankings)


def _drawn(population: PairPopulation, sample: HumanSample | None) -> tuple[np.ndarray, bool, list[str]]:
    """(drawn pairs with a human grade, stratified?, notes)."""
    graded = ~np.isnan(population.human)
    if sample is None:
        return np.flatnonzero(graded), False, [UNSAMPLED_NOTE]
    if sample.unit != "pair":
        raise EstimationError(
            f"sample {sample.name} drew {sample.unit}s: a pair estimate needs a pair sample"
        )
    keys = set(sample.units.values_list("key", flat=True))
    drawn = np.array([k in keys for k in population.keys])
    notes = []
    missing = int((drawn & ~graded).sum())
    if missing:
        notes.append(
            f"{plural(missing, 'drawn pair')} {'has' if missing == 1 else 'have'} no human grade yet: the "
            "intervals assume they are missing at random"
        )
    return np.flatnonzero(drawn & graded), sample.strategy == HumanSample.Strategy.STRATIFIED, notes


def pair_hybrid_estimate(
    *,
    population: PairPopulation,
    measure: str,
    method: str,
    alpha: float = 0.05,
    sample: HumanSample | None = None,
    coverage: Callable[..., Coverage | None] = pair_coverage,
) -> HybridEstimate:
    """Every run's interval from the pair sample and, for nDCG@k and P@k, every pair's difference with
    Holm's settled pairs and the ranking's agreement bound (`estimate.add_pairs`). `coverage` simulates the
    design on the same data (`coverage.pair_coverage`): the result warns when its worst run is under the
    floor."""
    parsed = parse_ranked(measure)
    two_stage = sample is not None and sample.strategy == HumanSample.Strategy.TWO_STAGE
    check_offered(parsed, two_stage=two_stage)
    if two_stage and sample is not None:
        result = two_stage_estimate(
            population=population, measure=parsed, method=method, alpha=alpha, sample=sample
        )
        result.coverage = coverage(
            population=population,
            measure=parsed,
            drawn=_drawn(population, sample)[0],
            method=method,
            alpha=alpha,
            design="two-stage",
            budget=sample.budget,
        )
        return result
    if method not in PAIR_METHODS:
        raise EstimationError(f"a pair sample's methods are {', '.join(PAIR_METHODS)}, not {method!r}")
    drawn, stratified, notes = _drawn(population, sample)
    if len(drawn) < 2:
        raise EstimationError(f"an interval needs at least 2 human-graded drawn pairs, got {len(drawn)}")
    layout, idx = (
        sample_layout(population, drawn, sample_strata(population, sample.measure))
        if stratified and sample is not None
        else uniform_layout(population, drawn)
    )
    design = (
        f"sample {sample.name}: {sample.get_strategy_display().lower()}, {plural(len(drawn), 'graded pair')}"
        if sample is not None
        else "human-graded pairs, assumed a uniform random sample"
    )
    result = HybridEstimate(
        task="relevance",
        measure=measure,
        unit="pair",
        method=method,
        alpha=alpha,
        design=design,
        notes=list(population.notes) + notes,
    )
    y = population.human[idx]
    got = ranked_estimates(population=population, measure=parsed, layout=layout, idx=idx, y=y, method=method)
    est, se, lam = got.estimate, got.se, got.lam[:, 0, :].mean(-1)
    human_only = (
        est
        if method == "classical"
        else ranked_estimates(
            population=population, measure=parsed, layout=layout, idx=idx, y=y, method="classical"
        ).estimate
    )
    n, big_n = len(drawn), population.size
    inside = informative_pairs(population, parsed, idx[0])
    point, lo, hi, _wilson = interval_ends(
        estimate=est[:, 0],
        se=se[:, 0],
        se_srs=se[:, 0],
        n=n,
        binary=False,
        identical=bool(np.ptp(y) == 0),
        census=(n == big_n) | ((parsed.name == "P") & (inside == total_inside(population, parsed))),
        alpha=alpha,
        bounds=(0.0, 1.0),
    )
    for r, run in enumerate(population.runs):
        result.runs[run] = Estimate(
            estimate=float(point[r]),
            lo=float(lo[r]),
            hi=float(hi[r]),
            se=float(se[r, 0]),
            lam=float(lam[r]),
            n_human=n,
            n_machine=big_n,
            effective_n=float("nan"),
            rule="census" if n == big_n or se[r, 0] == 0 else "t",
            warning=informative_warning(int(inside[r]), parsed),
        )
    result.notes.append("pair estimates: design-weighted within the sample's strata (docs/statistics.md)")
    # A difference's linearised residuals are the two runs' residuals' difference on the same pairs.
    residuals = got.residuals[:, 0, :]
    add_pairs(
        result,
        estimates=point,
        difference_se=lambda i, j: float(stratified_se((residuals[i] - residuals[j])[None, :], layout)[0]),
        df=max(n - 1, 1),
        human_only=human_only[:, 0],
        n_human=n,
        n_machine=big_n,
    )
    # P@k's variance is the stratified sample's without replacement, (1 - n_h/N_h) included.
    result.fpc = True
    result.coverage = coverage(
        population=population,
        measure=parsed,
        drawn=drawn,
        method=method,
        alpha=alpha,
        design="stratified" if stratified else "uniform",
    )
    return result


def two_stage_estimate(
    *, population: PairPopulation, measure: RankedMeasure, method: str, alpha: float, sample: HumanSample
) -> HybridEstimate:
    """Every run's nDCG@k, P@k or AP from a two-stage sample (`two_stage`): each drawn turn's score from its
    census and its drawn other pairs, then the turn-level estimate over the drawn turns."""
    if method not in TWO_STAGE_METHODS:
        raise EstimationError(
            f"a two-stage sample's methods are {', '.join(TWO_STAGE_METHODS)}, not {method!r}"
        )
    drawn_for = parse_ranked(sample.measure) if is_ranked(sample.measure) else None
    if (
        drawn_for is None
        or (measure.name == "AP") != (drawn_for.name == "AP")
        or (drawn_for.cutoff or 0) < (measure.cutoff or 0)
        or (measure.name == "nDCG" and drawn_for.name != "nDCG")
    ):
        # The census holds the pairs within the cutoff the sample was drawn for, and only an nDCG sample
        # draws the other pairs the ideal DCG needs: anything else would weight a non-random part.
        raise EstimationError(
            f"sample {sample.name} was drawn for {sample.measure or 'no measure'}: a two-stage sample "
            f"estimates {measure.text} when drawn for "
            + (
                "AP (the census holds every pair a run retrieves)"
                if measure.name == "AP"
                else f"nDCG@k (P@k: either) with a cutoff of at least {measure.cutoff}"
            )
        )
    sampled, _stratified, notes = _drawn(population, sample)
    keys = set(sample.units.values_list("key", flat=True))
    turns_drawn = np.unique(population.turn[[j for j, k in enumerate(population.keys) if k in keys]])
    turns = np.unique(population.turn[sampled])
    if len(turns) < len(turns_drawn):
        lost = len(turns_drawn) - len(turns)
        notes.append(
            f"{plural(lost, 'drawn turn')} without a human grade left out: assumed missing at random"
        )
    check_two_stage_turns(measure, len(turns), len(population.turns))
    human, empty = drawn_turn_scores(population, measure, sampled, turns)
    if empty:
        notes.append(
            f"{plural(empty, 'stratum')} of the drawn turns without a human grade: "
            "their pairs count as ungraded, which biases those turns' scores"
        )
    machine = turn_scores(population, measure, population.machine)
    got = turn_level(human=human, machine_drawn=machine[:, turns], machine_all=machine, method=method)
    every = len(sampled) == population.size
    est, lo, hi = two_stage_intervals(got=got, alpha=alpha, census=every, exact=measure.name == "P")
    result = HybridEstimate(
        task="relevance",
        measure=measure.text,
        unit="pair",
        method=method,
        alpha=alpha,
        design=f"sample {sample.name}: two-stage, {plural(len(turns), 'turn')}, {plural(len(sampled), 'graded pair')}",
        notes=list(population.notes) + notes,
    )
    warning = two_stage_warning(len(turns), len(population.turns))
    for r, run in enumerate(population.runs):
        result.runs[run] = Estimate(
            estimate=float(est[r]),
            lo=float(lo[r]),
            hi=float(hi[r]),
            se=float(got.se[r]),
            lam=float(got.lam[r]),
            n_human=len(sampled),
            n_machine=population.size,
            effective_n=float("nan"),
            rule="census" if every else "betting" if got.boundary[r] else "t",
            warning="; ".join(
                w
                for w in (warning, boundary_warning(measure) if got.boundary[r] and not every else None)
                if w
            )
            or None,
        )
    result.notes.append(
        "two-stage estimates: each drawn turn's score from its pairs, then the machine's score on every turn "
        "corrected by the drawn turns (Student t over them, for P@k with the finite-population correction; "
        "for a run at 0 or 1 widened by a betting interval; docs/statistics.md)"
    )
    # Each run's estimate is the machine's mean plus the mean of its residuals over the drawn turns, so a
    # difference's standard error is that of the residuals' differences over the same turns.
    residuals = human - got.lam[:, None] * machine[:, turns]
    n_turns = residuals.shape[1]
    add_pairs(
        result,
        estimates=est,
        difference_se=lambda i, j: (
            0.0 if every else float(np.std(residuals[i] - residuals[j], ddof=1) / np.sqrt(n_turns))
        ),
        df=max(n_turns - 1, 1),
        human_only=human.mean(1),
        n_human=len(sampled),
        n_machine=population.size,
    )
    result.fpc = measure.name == "P"
    return result
