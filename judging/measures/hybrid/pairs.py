"""Pair designs: (turn, passage) pairs of the pool drawn within strata of the machine judge's grade.

A whole-turn sample spends a human's time on every pooled passage of a few turns, and a run's score then
varies with which turns were drawn. A pair sample spreads the same number of human labels over every
turn, and the machine's grade on every pair carries most of each turn's score; the human labels correct
it. This module holds the population (every pooled pair, its machine grade, its rank in each run) and the
stratified draw; `ranked` holds the estimators of nDCG@k, P@k and AP from such a sample.

Strata are the machine's grades, not (turn, grade): at the budgets people afford (a few human pairs per
turn) a turn-by-grade stratum would hold one or two drawn pairs, too few for a within-stratum variance,
and the per-turn ratio estimates infAP-style designs lean on would be biased at that size. Turns enter
the estimators instead: every run's gains are estimated turn by turn.

Allocation: Neyman (n_h proportional to N_h S_h) with S_h the standard deviation of the human grade in
stratum h among a pilot's labels, so strata where the machine's grade says little about the human's get
more labels; without a pilot, proportional (n_h proportional to N_h). Every stratum that can gets at
least two pairs (a stratum's variance needs two).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from core.ordering import natural_key
from core.wording import plural
from judging.measures.hybrid.sampling import SamplingError

DESIGNS = ("uniform", "stratified")
MIN_PER_STRATUM = 2


@dataclass
class PairPopulation:
    """Every pooled (turn, passage) pair with a machine grade, and where each run ranks it.

    `rank[r, j]` is pair j's 1-based position in run r's ranking of its turn (every retrieved passage
    counts, pooled or not, as trec_eval counts them), 0 where the run did not retrieve it. `human` is NaN
    where there is no human grade.
    """

    keys: list[str]
    turns: list[str]
    turn: np.ndarray  # (N,) index into `turns`
    machine: np.ndarray  # (N,) machine grade
    human: np.ndarray  # (N,) human grade or NaN
    runs: list[str]
    rank: np.ndarray  # (runs, N)
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.keys)

    def complete(self) -> PairPopulation:
        """Only the pairs with a human grade (the simulation's population), turns renumbered."""
        return self.only(~np.isnan(self.human))

    def only(self, keep: np.ndarray) -> PairPopulation:
        """Only the pairs `keep` (N,) marks, turns renumbered."""
        used = np.unique(self.turn[keep])
        renumber = np.full(len(self.turns), -1)
        renumber[used] = np.arange(len(used))
        return PairPopulation(
            keys=[k for k, ok in zip(self.keys, keep, strict=True) if ok],
            turns=[self.turns[i] for i in used],
            turn=renumber[self.turn[keep]],
            machine=self.machine[keep],
            human=self.human[keep],
            runs=self.runs,
            rank=self.rank[:, keep],
            notes=list(self.notes),
        )


def trec_order(scores: Mapping[str, float]) -> list[str]:
    """Passage ids in trec_eval's order: score descending, ties by passage id descending."""
    return [d for d, _s in sorted(scores.items(), key=lambda x: (x[1], x[0]), reverse=True)]


def pair_population(
    *,
    machine: Mapping[str, Mapping[str, int]],
    human: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> PairPopulation:
    """The population from qrels-shaped dicts ({turn: {passage: grade}}) and runs ({run: {turn: {passage:
    score}}}). The machine's pairs define it; human grades elsewhere are left out, and said so."""
    turns = sorted(machine, key=natural_key)
    keys: list[str] = []
    turn_of: list[int] = []
    machine_g: list[int] = []
    human_g: list[float] = []
    index: dict[tuple[str, str], int] = {}
    for t_i, t in enumerate(turns):
        for p in sorted(machine[t]):
            index[(t, p)] = len(keys)
            keys.append(f"{t}\t{p}")
            turn_of.append(t_i)
            machine_g.append(int(machine[t][p]))
            grade = human.get(t, {}).get(p)
            human_g.append(np.nan if grade is None else float(grade))
    run_names = sorted(rankings)
    rank = np.zeros((len(run_names), len(keys)), dtype=np.int64)
    for r_i, run in enumerate(run_names):
        for t, scores in rankings[run].items():
            for position, p in enumerate(trec_order(scores), start=1):
                j = index.get((t, p))
                if j is not None:
                    rank[r_i, j] = position
    notes = []
    outside = sum(1 for t, ps in human.items() for p in ps if (t, p) not in index)
    if outside:
        notes.append(
            f"{plural(outside, 'human label')} on pairs the machine did not label "
            f"{'is' if outside == 1 else 'are'} not used"
        )
    return PairPopulation(
        keys=keys,
        turns=turns,
        turn=np.array(turn_of, dtype=np.int64),
        machine=np.array(machine_g, dtype=float),
        human=np.array(human_g, dtype=float),
        runs=run_names,
        rank=rank,
        notes=notes,
    )


def stratum_of(machine: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(stratum index per pair, stratum names): one stratum per machine grade, named 'm=<grade>'."""
    grades = np.unique(machine)
    return np.searchsorted(grades, machine), [f"m={int(g)}" for g in grades]


def neyman_allocation(*, sizes: np.ndarray, spreads: np.ndarray | None, budget: int) -> np.ndarray:
    """Pairs to draw per stratum, summing to `budget`: proportional to N_h * S_h (Neyman) or, without
    spreads, to N_h (proportional); at least `MIN_PER_STRATUM` where the stratum holds that many, at most
    N_h, rounded by largest remainder."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    if not 0 < budget <= total:
        raise SamplingError(f"the budget must lie between 1 and the {plural(total, 'pair')}, not {budget}")
    floor = np.minimum(sizes, MIN_PER_STRATUM)
    if budget < floor.sum():
        raise SamplingError(
            f"a stratified sample of {len(sizes)} strata needs at least {plural(int(floor.sum()), 'pair')} "
            f"({MIN_PER_STRATUM} per stratum), not {budget}"
        )
    weight = sizes.astype(float) * (np.ones(len(sizes)) if spreads is None else np.asarray(spreads, float))
    if weight.sum() <= 0:
        weight = sizes.astype(float)
    # Strata whose share falls below the floor or above their size are set there; the rest share what is
    # left in proportion to their weights, until no stratum moves.
    fixed = np.zeros(len(sizes), dtype=bool)
    target = np.zeros(len(sizes))
    for _ in range(len(sizes) + 1):
        free = ~fixed
        rest = budget - target[fixed].sum()
        share = weight[free].sum()
        target[free] = rest * weight[free] / share if share > 0 else rest / max(free.sum(), 1)
        low, high = free & (target < floor), free & (target > sizes)
        if not (low | high).any():
            break
        target[low], target[high] = floor[low], sizes[high]
        fixed |= low | high
    alloc: np.ndarray = np.minimum(np.floor(target + 1e-9).astype(np.int64), sizes)
    order = np.argsort(-(target - alloc), kind="stable")
    for h in order:  # largest remainders first, then anyone with room
        if alloc.sum() >= budget:
            break
        if alloc[h] < sizes[h]:
            alloc[h] += 1
    for h in np.argsort(-(sizes - alloc), kind="stable"):
        take = min(budget - int(alloc.sum()), int(sizes[h] - alloc[h]))
        alloc[h] += max(take, 0)
    return alloc


def pilot_spreads(*, strata: np.ndarray, count: int, human: np.ndarray) -> np.ndarray:
    """Each stratum's standard deviation of the pilot's human grades (NaN where unlabelled). A stratum
    with fewer than two pilot labels gets the largest spread seen: knowing nothing of it is no reason to
    starve it."""
    spreads = np.full(count, np.nan)
    for h in range(count):
        values = human[(strata == h) & ~np.isnan(human)]
        if len(values) >= 2:
            spreads[h] = float(np.std(values, ddof=1))
    known = ~np.isnan(spreads)
    fallback = float(spreads[known].max()) if known.any() else 1.0
    return np.where(known, spreads, fallback)


@dataclass(frozen=True)
class PairDraw:
    chosen: np.ndarray  # pair indices, grouped by stratum
    probability: np.ndarray  # inclusion probability of each chosen pair
    stratum: list[str]  # stratum name of each chosen pair
    allocation: dict[str, int]
    rule: str  # "neyman" or "proportional"


def design_strata(
    machine: np.ndarray, *, value: np.ndarray | None = None
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(stratum per pair, names, each stratum's mean value): machine grade, split by whether any run ranks
    the pair where the measure looks (`value` > 0: within the cutoff, or retrieved at all for AP).

    `value` (N,) is a pair's worth to the runs' scores (`ranked.design_value`: positive within some run's
    cutoff, its absolute value the worth); None: strata by grade alone, every pair of worth 1.
    """
    grades, names = stratum_of(machine)
    if value is None:
        return grades, names, np.ones(len(names))
    top = value > 0
    strata = grades * 2 + top
    labels = [f"{n},{band}" for n in names for band in ("rest", "top")]
    used = np.unique(strata)
    renumber = np.searchsorted(used, strata)
    sums = np.bincount(renumber, np.abs(value))
    sizes = np.bincount(renumber)
    return renumber, [labels[u] for u in used], sums / sizes


def stratified_draw(
    *,
    machine: np.ndarray,
    budget: int,
    seed: int | None,
    pilot: np.ndarray | None = None,
    value: np.ndarray | None = None,
) -> PairDraw:
    """A stratified sample without replacement: `allocation` pairs drawn uniformly within each stratum
    (`design_strata`). `pilot` (N,) holds a previous sample's human grades (NaN elsewhere) for Neyman
    allocation; `value` weights the allocation towards the pairs the runs' scores depend on."""
    strata, names, worth = design_strata(machine, value=value)
    sizes = np.bincount(strata, minlength=len(names))
    spreads = (
        np.ones(len(names)) if pilot is None else pilot_spreads(strata=strata, count=len(names), human=pilot)
    )
    alloc = neyman_allocation(sizes=sizes, spreads=spreads * worth, budget=budget)
    rng = np.random.default_rng(seed)
    chosen: list[np.ndarray] = []
    probability: list[np.ndarray] = []
    labels: list[str] = []
    for h, name in enumerate(names):
        members = np.flatnonzero(strata == h)
        picked = np.sort(rng.choice(members, size=int(alloc[h]), replace=False))
        chosen.append(picked)
        probability.append(np.full(len(picked), alloc[h] / sizes[h]))
        labels.extend([name] * len(picked))
    return PairDraw(
        chosen=np.concatenate(chosen),
        probability=np.concatenate(probability),
        stratum=labels,
        allocation={n: int(a) for n, a in zip(names, alloc, strict=True)},
        rule="proportional" if pilot is None else "neyman",
    )
