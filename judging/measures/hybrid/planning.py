"""How many human-labelled units (turns or pairs: the table's own unit) a campaign needs, read off a pilot.

**Width, with assurance.** The width of an interval is itself random: a budget at which the *expected*
width meets the target meets it only about half the time. The plan is the smallest budget n at which a
run's interval, as `estimate` prints it (PPI++, Student or Wilson ends, clipped; `fpc` for the
finite-population correction), is at most the target width in at least `assurance` (default 80%) of
samples. That share is found by resampling: `DRAWS` samples of n units drawn with replacement from the
pilot's (human, machine) values, each turned into its interval with the pilot's power-tuning weight and
the machine's values on every unit; the smallest such n is found by bisection with the same random
numbers at every n. The worst run decides the campaign's budget.

**Settling pairs.** A pair of runs with estimated difference d is settled after the n at which
t * se(n) = |d|, if d is the true difference (about even odds then; `estimate` settles pairs under Holm's
control, which asks more as the number of pairs grows).

**Per pilot, not on average.** A budget read off the pilot's own variance meets the assurance for about
half the pilots, since the pilot's variance is itself a draw. So each run's resamples are spread out to
the pilot's one-sided `PILOT_UPPER` upper confidence bound of the rectifier's variance (chi-square, with
degrees of freedom lowered for the pilot's excess kurtosis, as graded labels have): the plan then meets
the assurance for at least about that share of pilots. The run whose budget is largest decides.

Every budget is at least `MIN_UNITS` (the size below which the intervals' coverage was not shown to
hold), or every unit when there are fewer. The plan is only as good as the pilot: with a small pilot
the rectifier's variance is known only within a chi-square interval, and the budget scales with it, so
the plan states the range of budgets that interval implies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.wording import plural
from judging.measures.hybrid.estimators import (
    MIN_UNITS,
    EstimationError,
    fpc_interval,
    ppi_plus_plus_lam,
    small_sample_warning,
    z_value,
)
from judging.measures.hybrid.intervals import Bounds, interval_ends, measure_bounds, quantiles
from judging.measures.hybrid.table import UnitTable

ASSURANCE = 0.8
DRAWS = 400
PILOT_RANGE = 0.9  # the two-sided level of the pilot variance's chi-square interval
PILOT_UPPER = 0.9  # the one-sided level of the pilot variance's upper bound the plan is sized from


def variance_upper_factor(values: np.ndarray, level: float) -> float:
    """The factor by which the variance of `values` is at most this times its sample variance, with
    one-sided confidence `level`: chi-square with Satterthwaite's degrees of freedom for a non-normal
    sample, 2 / (2 / (n - 1) + excess kurtosis / n) (the kurtosis taken as at least 0)."""
    n = len(values)
    if n < 2:
        return 1.0
    from scipy.special import chdtri

    centred = values - values.mean()
    m2 = float(np.mean(centred**2))
    kurtosis = float(np.mean(centred**4)) / m2**2 - 3 if m2 > 0 else 0.0
    df = 2 / (2 / (n - 1) + max(kurtosis, 0.0) / n)
    return float(df / chdtri(df, level))


@dataclass
class RunPlan:
    run: str
    n_pilot: int
    width_now: float
    needed: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_pilot": self.n_pilot,
            "width_now": self.width_now,
            "needed": _finite(self.needed),
            "more_needed": _finite(max(0.0, self.needed - self.n_pilot)),
        }


@dataclass
class BudgetPlan:
    units: int
    target_width: float | None
    settle_share: float | None
    alpha: float
    unit: str = "turn"
    assurance: float = ASSURANCE
    runs: dict[str, RunPlan] = field(default_factory=dict)
    pair_needs: list[float] = field(default_factory=list)
    n_pilot: int = 0
    nothing_to_estimate: list[str] = field(default_factory=list)
    fpc: bool = False
    pilot_upper: float | None = PILOT_UPPER

    def word(self, n: int) -> str:
        return plural(n, self.unit)

    @property
    def floor(self) -> int:
        """The smallest budget recommended: MIN_UNITS, or every unit when there are fewer."""
        return min(MIN_UNITS, self.units)

    def pilot_range(self) -> tuple[float, float] | None:
        """Factors by which the pilot's variance, hence the budget, may be off (a `PILOT_RANGE` chi-square
        interval for a variance estimated from the pilot's units); None without a pilot of 2 or more."""
        if self.n_pilot < 2:
            return None
        from scipy.special import chdtri

        df = self.n_pilot - 1
        tail = (1 - PILOT_RANGE) / 2
        return float(df / chdtri(df, tail)), float(df / chdtri(df, 1 - tail))

    @property
    def warnings(self) -> list[str]:
        """Where the plan rests on sizes below those at which the intervals' coverage was shown to hold."""
        out = []
        if self.n_pilot < MIN_UNITS:
            out.append(f"pilot: {small_sample_warning(n=self.n_pilot)}; its variances are rough too")
        if self.units < MIN_UNITS:
            out.append(
                f"only {self.word(self.units)} to draw from, fewer than {MIN_UNITS}: intervals at any budget "
                "come with the small-sample warning"
            )
        return out

    @property
    def needed_for_width(self) -> float | None:
        """The budget at which every run's interval meets the target width with the plan's assurance."""
        if self.target_width is None or not self.runs:
            return None
        return max(p.needed for p in self.runs.values())

    @property
    def needed_for_settling(self) -> float | None:
        """The budget after which the wanted share of run pairs is settled."""
        if self.settle_share is None or not self.pair_needs:
            return None
        ordered = sorted(self.pair_needs)
        k = max(1, math.ceil(self.settle_share * len(ordered)))
        return ordered[k - 1]

    def _capped(self, n: float | None) -> int | None:
        """The budget (at least `floor`), or None when no budget up to the units available reaches the goal."""
        if n is None or not math.isfinite(n) or n > self.units:
            return None
        return max(math.ceil(n), self.floor)

    @property
    def confidence(self) -> str:
        return f"{100 * (1 - self.alpha):g}%"

    def sureness(self, n: int) -> str:
        """How sure the plan is, as a clause: the budgets the pilot's variance range implies."""
        factors = self.pilot_range()
        if factors is None:
            return ""
        lo, hi = (min(self.units, max(self.floor, math.ceil(n * f))) for f in factors)
        sized = (
            f"sized from the {100 * self.pilot_upper:g}% upper bound of each run's variance, "
            if self.pilot_upper
            else ""
        )
        return (
            f" ({sized}from a pilot of {self.word(self.n_pilot)}: the spread of the pilot's variance "
            f"puts it anywhere from {lo} to {hi} with {100 * PILOT_RANGE:g}% confidence)"
        )

    def width_sentence(self) -> str | None:
        """What the plan says about the target width, as a true sentence."""
        if self.target_width is None:
            return None
        if not self.runs:
            return f"no run has the two labelled {self.unit}s a plan for width {self.target_width:g} needs"
        goal = (
            f"every run's {self.confidence} interval at most {self.target_width:g} wide "
            f"in {100 * self.assurance:g}% of samples"
        )
        n = self._capped(self.needed_for_width)
        if n is None:
            return f"no budget up to the {self.word(self.units)} available makes {goal}"
        return f"{goal}: {self.word(n)} in all{self.sureness(n)}"

    def settling_sentence(self) -> str | None:
        """What the plan says about settling run pairs, as a true sentence."""
        if self.settle_share is None:
            return None
        share = f"{100 * self.settle_share:g}% of run pairs"
        n = self._capped(self.needed_for_settling)
        if n is None:
            return f"no budget up to the {self.word(self.units)} available settles {share}"
        return f"{share} settled, with about even odds: {self.word(n)} in all{self.sureness(n)}"

    def as_json(self) -> dict[str, Any]:
        factors = self.pilot_range()
        return {
            "unit": self.unit,
            "units": self.units,
            "alpha": self.alpha,
            "assurance": self.assurance,
            "n_pilot": self.n_pilot,
            "pilot_variance_range": list(factors) if factors else None,
            "pilot_upper": self.pilot_upper,
            "target_width": self.target_width,
            "settle_share": self.settle_share,
            "minimum": self.floor,
            "budget_for_width": self._capped(self.needed_for_width),
            "budget_for_settling": self._capped(self.needed_for_settling),
            "width_plan": self.width_sentence(),
            "settling_plan": self.settling_sentence(),
            "runs": {r: p.as_dict() for r, p in self.runs.items()},
            "nothing_to_estimate": self.nothing_to_estimate,
            "fpc": self.fpc,
            "warnings": self.warnings,
        }


def _finite(x: float) -> float | None:
    return float(math.ceil(x)) if math.isfinite(x) else None


def size_for(
    *, sigma2: float, imputed2: float, big_n: int, half_width: float, alpha: float, fpc: bool = False
) -> float:
    """The n with t(n - 1) * se(n) = half_width (inf when no n up to N reaches it).

    se(n)^2 is sigma2 / n + imputed2 / N, or with `fpc` (1 - n/N) sigma2 / n (`estimators.fpc_interval`).
    Student's quantile depends on n, so the equation is solved by a few fixed-point steps from the normal one.
    """
    n = 2.0
    z = z_value(alpha)
    for step in range(20):
        q = z if step == 0 else float(quantiles(alpha, math.ceil(n) - 1)[1])
        if fpc:
            room = (half_width / q) ** 2 + sigma2 / big_n
        else:
            room = (half_width / q) ** 2 - imputed2 / big_n
        if room <= 0:
            return math.inf
        new = max(2.0, sigma2 / room)
        if abs(new - n) < 1e-9:
            break
        n = new
    return n


def assured_size(
    *,
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_all: np.ndarray,
    lam: float,
    target_width: float,
    assurance: float,
    alpha: float,
    fpc: bool = False,
    bounds: Bounds = (0.0, 1.0),
    draws: int = DRAWS,
    seed: int = 0,
    inflate: float = 1.0,
) -> float:
    """The smallest n in [2, N] at which the interval is at most `target_width` wide in at least
    `assurance` of `draws` resamples of n pilot units (inf when not even N reaches it); `inflate`
    spreads the pilot's rectifier values about their mean so their variance is that many times larger."""
    big_n = len(yhat_all)
    pooled = y - lam * yhat
    pooled = pooled.mean() + math.sqrt(inflate) * (pooled - pooled.mean())
    machine_term = lam * float(np.mean(yhat_all))
    imputed = lam**2 * float(np.var(yhat_all)) / big_n
    binary = bool(np.all((y == 0) | (y == 1)))

    def share(n: int) -> float:
        # The same random numbers at every n, so the share falls smoothly as n grows.
        picks = np.random.default_rng(seed).integers(0, len(y), size=(draws, n))
        ys = y[picks]
        rect = pooled[picks]
        variance = rect.var(-1, ddof=1) if n > 1 else np.zeros(draws)
        se = np.sqrt((1 - n / big_n) * variance / n if fpc else variance / n + imputed)
        _est, lo, hi, _wilson = interval_ends(
            estimate=machine_term + rect.mean(-1),
            se=se,
            se_srs=np.sqrt(ys.var(-1, ddof=1) / n),
            n=n,
            binary=binary,
            identical=np.ptp(ys, axis=-1) == 0,
            census=fpc and n == big_n,
            alpha=alpha,
            bounds=bounds,
        )
        return float(np.mean(hi - lo <= target_width + 1e-12))

    if share(big_n) < assurance:
        return math.inf
    low, high = 2, big_n
    while low < high:
        middle = (low + high) // 2
        if share(middle) >= assurance:
            high = middle
        else:
            low = middle + 1
    return float(low)


def _lam(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, fpc: bool) -> float:
    """PPI++'s power-tuning weight, as `estimators.mean_interval` tunes it."""
    if fpc:
        return fpc_interval(y=y, yhat=yhat, yhat_all=yhat_all, lam=None)[2]
    return ppi_plus_plus_lam(y=y, yhat=yhat, yhat_all=yhat_all)


def _variances(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, fpc: bool) -> tuple[float, float]:
    """(rectifier variance, machine term's variance) of PPI++, as `estimators.mean_interval` computes them."""
    lam = _lam(y, yhat, yhat_all, fpc)
    return float(np.var(y - lam * yhat, ddof=1)), 0.0 if fpc else float(lam**2 * np.var(yhat_all))


def plan_budget(
    *,
    table: UnitTable,
    drawn: np.ndarray | None = None,
    target_width: float | None = None,
    settle_share: float | None = None,
    alpha: float = 0.05,
    fpc: bool = False,
    assurance: float = ASSURANCE,
    pilot_upper: float | None = PILOT_UPPER,
) -> BudgetPlan:
    """Units needed (in all, pilot included) per run for `target_width` with probability `assurance`, and
    to settle `settle_share`; `fpc`: for intervals with the finite-population correction. `pilot_upper`:
    the level of the pilot variance's upper bound the width plan is sized from (None: the pilot's
    variance itself, which meets the assurance for only about half the pilots)."""
    if target_width is None and settle_share is None:
        raise EstimationError("give a target width, a share of pairs to settle, or both")
    if target_width is not None and target_width <= 0:
        raise EstimationError(f"the target width must be positive, not {target_width}")
    if not 0 < assurance < 1:
        raise EstimationError(f"the assurance must lie strictly between 0 and 1, not {assurance}")
    if settle_share is not None and not 0 < settle_share <= 1:
        raise EstimationError(f"the share of pairs to settle must be in (0, 1], not {settle_share}")
    if drawn is None:
        drawn = table.labelled_units()
    plan = BudgetPlan(
        units=table.size,
        target_width=target_width,
        settle_share=settle_share,
        alpha=alpha,
        unit=table.unit,
        assurance=assurance,
        fpc=fpc,
        pilot_upper=pilot_upper,
    )
    bounds = measure_bounds(table.measure)
    rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for i, run in enumerate(table.runs):
        present = ~np.isnan(table.machine[i])
        labelled = drawn & present & ~np.isnan(table.human[i])
        if labelled.sum() < 2:
            continue
        y, yhat, yhat_all = table.human[i][labelled], table.machine[i][labelled], table.machine[i][present]
        if np.ptp(y) == 0 and np.ptp(yhat_all) == 0:
            # The same value everywhere (a run that ranks nothing): its interval is 0 wide at any budget,
            # so it neither needs units nor says anything about the units the other runs need.
            plan.nothing_to_estimate.append(run)
            continue
        rows[run] = (table.human[i], table.machine[i], present)
        sigma2, imputed2 = _variances(y, yhat, yhat_all, fpc)
        n, big_n = int(labelled.sum()), len(yhat_all)
        variance = (1 - n / big_n) * sigma2 / n if fpc else sigma2 / n + imputed2 / big_n
        width_now = 2 * float(quantiles(alpha, n - 1)[1]) * math.sqrt(variance)
        needed = (
            assured_size(
                y=y,
                yhat=yhat,
                yhat_all=yhat_all,
                lam=_lam(y, yhat, yhat_all, fpc),
                target_width=target_width,
                assurance=assurance,
                alpha=alpha,
                fpc=fpc,
                bounds=bounds,
                inflate=(
                    variance_upper_factor(y - _lam(y, yhat, yhat_all, fpc) * yhat, pilot_upper)
                    if pilot_upper
                    else 1.0
                ),
            )
            if target_width is not None
            else math.nan
        )
        # No run's budget below the floor either: its interval would come with the small-sample warning.
        needed = max(needed, plan.floor) if math.isfinite(needed) else needed
        plan.runs[run] = RunPlan(run=run, n_pilot=n, width_now=width_now, needed=needed)
        plan.n_pilot = max(plan.n_pilot, n)
    if settle_share is not None:
        names = list(rows)
        for x, a in enumerate(names):
            for b in names[x + 1 :]:
                ya, ha, pa = rows[a]
                yb, hb, pb = rows[b]
                present = pa & pb
                labelled = drawn & present & ~np.isnan(ya) & ~np.isnan(yb)
                if labelled.sum() < 2:
                    continue
                d, dh = (ya - yb)[labelled], (ha - hb)[labelled]
                d_all = (ha - hb)[present]
                lam = ppi_plus_plus_lam(y=d, yhat=dh, yhat_all=d_all)
                difference = float(lam * d_all.mean() + (d - lam * dh).mean())
                sigma2, imputed2 = _variances(d, dh, d_all, fpc)
                plan.pair_needs.append(
                    size_for(
                        sigma2=sigma2,
                        imputed2=imputed2,
                        big_n=len(d_all),
                        half_width=abs(difference),
                        alpha=alpha,
                        fpc=fpc,
                    )
                    if difference != 0
                    else math.inf
                )
    return plan
