"""Each run's hybrid estimate, the differences between runs, and the ranking with its settled pairs.

Which human labels count depends on how they were drawn:

* With a stored sample (drawn on the estimates page or by `sample_for_humans`), only the drawn units count, each with its stored
  inclusion probability; human labels on other units are left out, since they were not drawn at random.
  A drawn unit that has no human label yet is reported as missing: the interval is then valid only if
  the missing units are missing at random.
* Without one, every human-labelled unit counts and the labels are treated as a uniform random sample
  of the units. That holds for a random sample drawn elsewhere; it does not hold for a top-k pool or
  units picked by hand, and the result says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.wording import plural
from judging.measures.hybrid.coverage import Coverage
from judging.measures.hybrid.estimators import Estimate, EstimationError, mean_interval
from judging.measures.hybrid.intervals import Bounds, measure_bounds, quantiles
from judging.measures.hybrid.table import UnitTable
from judging.measures.ranking import (
    MULTIPLE_COMPARISONS,
    PairTest,
    TauInterval,
    holm_reject,
    pair_p_value,
    settled_tau,
)

UNSAMPLED_NOTE = (
    "no human sample is chosen (draw one on the estimates page or with sample_for_humans): the human labels "
    "are treated as a uniform random sample of "
    "the units. If they come from a top-k pool or were picked by hand, the intervals are not valid."
)
FPC_NOTE = (
    "finite-population correction: the intervals are for the mean over exactly the machine-labelled "
    "units, and narrow as the sample covers more of them"
)


@dataclass
class PairDifference:
    """One pair of runs: the interval on their difference (the same units under both, so paired), its
    p-value, and whether Holm's procedure over all the pairs settles their order (`rankings`)."""

    a: str
    b: str
    estimate: Estimate
    p_value: float = 1.0
    holm: bool = False

    @property
    def settled(self) -> bool:
        return self.holm

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "difference": self.estimate.estimate,
            "ci": [self.estimate.lo, self.estimate.hi],
            "p_value": self.p_value,
            "settled": self.settled,
            "n_human": self.estimate.n_human,
        }


@dataclass(frozen=True)
class Draw:
    """Which units' human labels count: `drawn`, a mask over the table's units; `pi`, their inclusion
    probabilities (None: a uniform sample); `design`, the design in words; `stored`: a stored sample, not
    every human-labelled unit taken for a uniform sample."""

    drawn: np.ndarray
    pi: np.ndarray | None
    design: str
    stored: bool = True


def labelled_draw(table: UnitTable) -> Draw:
    """Every human-labelled unit, taken for a uniform random sample (no stored sample chosen)."""
    return Draw(table.labelled_units(), None, "human-labelled units, assumed a uniform random sample", False)


@dataclass
class HybridEstimate:
    task: str
    measure: str
    unit: str
    method: str
    alpha: float
    design: str
    fpc: bool = False
    runs: dict[str, Estimate] = field(default_factory=dict)
    pairs: list[PairDifference] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rank_agreement: TauInterval | None = None
    coverage: Coverage | None = None  # this setting's simulated coverage on the same data (`coverage`)

    def ranking(self) -> list[dict[str, Any]]:
        """Runs best first; each with the runs it beats and the runs its order against is not settled."""
        order = sorted(self.runs, key=lambda r: (-self.runs[r].estimate, r))
        beats: dict[str, list[str]] = {r: [] for r in order}
        unsettled: dict[str, list[str]] = {r: [] for r in order}
        for pair in self.pairs:
            if not pair.settled:
                unsettled[pair.a].append(pair.b)
                unsettled[pair.b].append(pair.a)
            elif pair.estimate.estimate > 0:
                beats[pair.a].append(pair.b)
            else:
                beats[pair.b].append(pair.a)
        return [
            {
                "rank": i,
                "run": run,
                "estimate": self.runs[run].estimate,
                "settled_above": sorted(beats[run]),
                "unsettled_with": sorted(unsettled[run]),
            }
            for i, run in enumerate(order, start=1)
        ]

    @property
    def confidence(self) -> str:
        """The interval's confidence level as people read it ("95%"), rather than its alpha."""
        return f"{100 * (1 - self.alpha):g}%"

    @property
    def warnings(self) -> list[str]:
        """One line per run whose sample is below the sizes where the intervals' coverage was shown to hold,
        and one where this setting's simulated coverage is under the floor."""
        lines = [f"{run}: {e.warning}" for run, e in self.runs.items() if e.warning]
        if self.coverage is not None and (line := self.coverage.warning()):
            lines.append(line)
        return lines

    def settled_share(self) -> float | None:
        return sum(p.settled for p in self.pairs) / len(self.pairs) if self.pairs else None

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "measure": self.measure,
            "unit": self.unit,
            "method": self.method,
            "alpha": self.alpha,
            "design": self.design,
            "fpc": self.fpc,
            "runs": {run: e.as_dict() for run, e in self.runs.items()},
            "pairs": [p.as_dict() for p in self.pairs],
            "ranking": self.ranking(),
            "settled_share": self.settled_share(),
            "multiple_comparisons": MULTIPLE_COMPARISONS,
            "rank_agreement": self.rank_agreement.as_dict() if self.rank_agreement else None,
            "coverage": self.coverage.as_dict() if self.coverage else None,
            "skipped": self.skipped,
            "notes": self.notes,
            "warnings": self.warnings,
        }


def _one(
    y_row: np.ndarray,
    yhat_row: np.ndarray,
    drawn: np.ndarray,
    pi: np.ndarray | None,
    method: str,
    alpha: float,
    fpc: bool = False,
    bounds: Bounds = (0.0, 1.0),
) -> tuple[Estimate, int]:
    present = ~np.isnan(yhat_row)
    labelled = drawn & present & ~np.isnan(y_row)
    missing = int((drawn & present & np.isnan(y_row)).sum())
    estimate = mean_interval(
        y=y_row[labelled],
        yhat=yhat_row[labelled],
        yhat_all=yhat_row[present],
        method=method,
        alpha=alpha,
        pi=None if pi is None else pi[labelled],
        fpc=fpc,
        bounds=bounds,
    )
    return estimate, missing


def runs_estimate(
    *,
    table: UnitTable,
    method: str,
    draw: Draw,
    alpha: float = 0.05,
    pairs: bool = True,
    fpc: bool = False,
) -> HybridEstimate:
    """Every run's interval under `method` from the human labels of `draw`, and (with `pairs`) every pair's
    difference; `fpc` makes them design-based, with the finite-population correction (`estimators`)."""
    drawn, pi, design = draw.drawn, draw.pi, draw.design
    result = HybridEstimate(
        task=table.task,
        measure=table.measure,
        unit=table.unit,
        method=method,
        alpha=alpha,
        design=design,
        fpc=fpc,
        notes=list(table.notes),
    )
    if not draw.stored:
        result.notes.append(UNSAMPLED_NOTE)
    if fpc:
        result.notes.append(FPC_NOTE)
    missing_total = 0
    for i, run in enumerate(table.runs):
        try:
            estimate, missing = _one(
                table.human[i], table.machine[i], drawn, pi, method, alpha, fpc, measure_bounds(table.measure)
            )
        except EstimationError as exc:
            result.skipped[run] = str(exc)
            continue
        result.runs[run] = estimate
        missing_total = max(missing_total, missing)
    if missing_total:
        result.notes.append(
            f"up to {plural(missing_total, 'drawn unit')} per run {'has' if missing_total == 1 else 'have'} no "
            "human label yet: the intervals assume they are "
            "missing at random; finish the assignment for a design-valid interval"
        )
    if pairs:
        names = [r for r in table.runs if r in result.runs]
        index = {r: i for i, r in enumerate(table.runs)}
        for x, a in enumerate(names):
            for b in names[x + 1 :]:
                ia, ib = index[a], index[b]
                try:
                    estimate, _missing = _one(
                        table.human[ia] - table.human[ib],
                        table.machine[ia] - table.machine[ib],
                        drawn,
                        pi,
                        method,
                        alpha,
                        fpc,
                        measure_bounds(table.measure, difference=True),
                    )
                except EstimationError:
                    continue
                p_value = pair_p_value(
                    difference=estimate.estimate, se=estimate.se, df=max(estimate.n_human - 1, 1)
                )
                result.pairs.append(PairDifference(a=a, b=b, estimate=estimate, p_value=p_value))
    if result.pairs:
        names = [r for r in table.runs if r in result.runs]
        rows = [table.runs.index(r) for r in names]
        human_only = np.array(
            [_weighted_mean(table.human[i], table.machine[i], drawn, pi) for i in rows], dtype=float
        )
        settle(result, human_only=dict(zip(names, human_only, strict=True)))
    return result


SETTLED_NOTE = (
    'a pair is settled when Holm\'s step-down procedure over all {pairs} rejects "no difference" at alpha '
    "{alpha} (multiple_comparisons: holm), so the chance that any settled pair is wrongly ordered is at most "
    "{alpha}; each pair's own interval is a per-pair interval"
)


def _weighted_mean(human: np.ndarray, machine: np.ndarray, drawn: np.ndarray, pi: np.ndarray | None) -> float:
    """The human-only estimate of a run: the design-weighted mean of its drawn units' human values."""
    labelled = drawn & ~np.isnan(machine) & ~np.isnan(human)
    if not labelled.any():
        return float("nan")
    weight = np.ones(int(labelled.sum())) if pi is None else 1 / np.asarray(pi, dtype=float)[labelled]
    return float((weight * human[labelled]).sum() / weight.sum())


def settle(result: HybridEstimate, *, human_only: dict[str, float]) -> None:
    """Holm's decisions over `result.pairs`, the settled note, and `TAU_ESTIMAND` with its bound (every
    design's pairs go through here). `human_only`: each run's estimate from the human labels alone."""
    if not result.pairs:
        return
    settled = holm_reject([p.p_value for p in result.pairs], result.alpha)
    for pair, holm in zip(result.pairs, settled, strict=True):
        pair.holm = bool(holm)
    result.notes.append(
        SETTLED_NOTE.format(alpha=f"{result.alpha:g}", pairs=plural(len(result.pairs), "pair"))
    )
    names = list(result.runs)
    result.rank_agreement = settled_tau(
        runs=names,
        estimates=np.array([result.runs[r].estimate for r in names]),
        human_only=np.array([human_only.get(r, np.nan) for r in names]),
        tests=[
            PairTest(a=p.a, b=p.b, difference=p.estimate.estimate, se=p.estimate.se, p_value=p.p_value)
            for p in result.pairs
        ],
        settled=settled,
        alpha=result.alpha,
    )


def add_pairs(
    result: HybridEstimate,
    *,
    estimates: np.ndarray,
    difference_se: Callable[[int, int], float],
    df: int,
    human_only: np.ndarray,
    n_human: int,
    n_machine: int,
) -> None:
    """Every pair's difference of `result.runs` (in order; `estimates` theirs) with its standard error from
    the design (`difference_se(i, j)`, the paired one: both runs share the drawn units), Student's t with
    `df` degrees of freedom, then `settle`. For designs whose run estimates are linear in the drawn units'
    residuals, where a difference is the difference of two estimates."""
    names = list(result.runs)
    t = float(quantiles(result.alpha, df)[1])
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            difference = float(estimates[i] - estimates[j])
            se = float(difference_se(i, j))
            p_value = pair_p_value(difference=difference, se=se, df=df)
            estimate = Estimate(
                estimate=difference,
                lo=max(difference - t * se, -1.0),
                hi=min(difference + t * se, 1.0),
                se=se,
                lam=float("nan"),
                n_human=n_human,
                n_machine=n_machine,
                effective_n=float("nan"),
                rule="t" if se > 0 else "census",
            )
            result.pairs.append(PairDifference(a=a, b=names[j], estimate=estimate, p_value=p_value))
    settle(result, human_only=dict(zip(names, (float(h) for h in human_only), strict=True)))


def _effective(value: float) -> str:
    """effective_n as printed: "–" where the design has none (pair designs)."""
    return "–" if np.isnan(value) else f"{value:.1f}"


def estimate_text(result: HybridEstimate) -> str:
    """A plain-text report: one line per run, best first, then the settled share of pairs."""
    lines = [
        f"{result.task} {result.measure} by {result.unit}, method {result.method}, "
        f"{100 * (1 - result.alpha):.0f}% intervals; {result.design}"
    ]
    ranking = result.ranking()
    width = max([3] + [len(r["run"]) for r in ranking])
    lines.append(f"{'run'.ljust(width)}  estimate  {'interval':>19}  n_human  n_machine  effective_n")
    for row in ranking:
        e = result.runs[row["run"]]
        lines.append(
            f"{row['run'].ljust(width)}  {e.estimate:8.4f}  [{e.lo:8.4f}, {e.hi:8.4f}]  {e.n_human:7d}  "
            f"{e.n_machine:9d}  {_effective(e.effective_n):>11}"
        )
    share = result.settled_share()
    if share is not None:
        settled = sum(p.settled for p in result.pairs)
        lines.append(
            f"settled pairs: {settled} of {len(result.pairs)} ({100 * share:.0f}%), "
            f"multiple comparisons: Holm, alpha {result.alpha:g}"
        )
    tau = result.rank_agreement
    if tau is not None:
        lines.append(
            f"{tau.estimand}: at least {tau.lo:.3f} ({tau.interval}); against the human-only ranking on "
            f"the sample {tau.tau:.3f}"
        )
    for run, reason in result.skipped.items():
        lines.append(f"{run}: no interval ({reason})")
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines) + "\n"
