"""How many human labels a campaign needs, read off a pilot sample.

For a mean over N units estimated from n human labels, PPI++ has variance
    sigma_rect^2 / n + lam^2 * var(Yhat) / N,
with sigma_rect^2 the variance of Y - lam*Yhat (lam the tuned weight). The pilot gives both variances;
solving for n gives the labels a run needs for an interval of a target width, and a pair of runs with
estimated difference d the labels after which its interval excludes 0 (t * se < |d|), if d is the true
difference. With the finite-population correction the variance is (1 - n/N) sigma_rect^2 / n instead. The plan is an extrapolation from the pilot and is only as good as its variance estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.wording import plural
from judging.hybrid.estimate import sample_weights
from judging.hybrid.estimators import (
    MIN_UNITS,
    EstimationError,
    fpc_interval,
    ppi_plus_plus_lam,
    small_sample_warning,
    z_value,
)
from judging.hybrid.intervals import quantiles
from judging.hybrid.units import UnitTable
from judging.models import HumanSample


@dataclass
class RunPlan:
    run: str
    n_pilot: int
    width_now: float
    labels_needed: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_pilot": self.n_pilot,
            "width_now": self.width_now,
            "labels_needed": _finite(self.labels_needed),
            "more_labels": _finite(max(0.0, self.labels_needed - self.n_pilot)),
        }


@dataclass
class BudgetPlan:
    units: int
    target_width: float | None
    settle_share: float | None
    alpha: float
    runs: dict[str, RunPlan] = field(default_factory=dict)
    pair_needs: list[float] = field(default_factory=list)
    n_pilot: int = 0
    nothing_to_estimate: list[str] = field(default_factory=list)
    fpc: bool = False

    @property
    def warnings(self) -> list[str]:
        """Where the plan rests on sizes below those at which the intervals' coverage was shown to hold."""
        out = []
        if self.n_pilot < MIN_UNITS:
            out.append(f"pilot: {small_sample_warning(n=self.n_pilot)}; its variances are rough too")
        for what, n in (("width", self.labels_for_width), ("settling", self.labels_for_settling)):
            capped = self._capped(n)
            if capped is not None and capped < MIN_UNITS:
                out.append(
                    f"the {what} plan's {plural(capped, 'label')} {'is' if capped == 1 else 'are'} below "
                    f"{MIN_UNITS}, where coverage was not shown "
                    f"to hold: label at least {MIN_UNITS}"
                )
        return out

    @property
    def labels_for_width(self) -> float | None:
        """Labels after which every run's interval is at most the target width (the worst run decides)."""
        if self.target_width is None or not self.runs:
            return None
        return max(p.labels_needed for p in self.runs.values())

    @property
    def labels_for_settling(self) -> float | None:
        """Labels after which the wanted share of run pairs is settled."""
        if self.settle_share is None or not self.pair_needs:
            return None
        ordered = sorted(self.pair_needs)
        k = max(1, math.ceil(self.settle_share * len(ordered)))
        return ordered[k - 1]

    def _capped(self, n: float | None) -> int | None:
        """Labels in all, or None when no budget up to the units available reaches the goal."""
        if n is None or not math.isfinite(n) or n > self.units:
            return None
        return math.ceil(n)

    @property
    def confidence(self) -> str:
        return f"{100 * (1 - self.alpha):g}%"

    def width_sentence(self) -> str | None:
        """What the plan says about the target width, as a true sentence."""
        if self.target_width is None:
            return None
        if not self.runs:
            return f"no run has the two labelled units a plan for width {self.target_width:g} needs"
        n = self._capped(self.labels_for_width)
        if n is None:
            return (
                f"no budget up to the {plural(self.units, 'unit')} available makes every run's {self.confidence} "
                f"interval at most {self.target_width:g} wide"
            )
        return (
            f"every run's {self.confidence} interval at most {self.target_width:g} wide: "
            f"{plural(n, 'label')} in all"
        )

    def settling_sentence(self) -> str | None:
        """What the plan says about settling run pairs, as a true sentence."""
        if self.settle_share is None:
            return None
        share = f"{100 * self.settle_share:g}% of run pairs"
        n = self._capped(self.labels_for_settling)
        if n is None:
            return f"no budget up to the {plural(self.units, 'unit')} available settles {share}"
        return f"{share} settled: {plural(n, 'label')} in all"

    def as_json(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "alpha": self.alpha,
            "n_pilot": self.n_pilot,
            "target_width": self.target_width,
            "settle_share": self.settle_share,
            "labels_for_width": self._capped(self.labels_for_width),
            "labels_for_settling": self._capped(self.labels_for_settling),
            "width_plan": self.width_sentence(),
            "settling_plan": self.settling_sentence(),
            "runs": {r: p.as_dict() for r, p in self.runs.items()},
            "nothing_to_estimate": self.nothing_to_estimate,
            "fpc": self.fpc,
            "warnings": self.warnings,
        }


def _finite(x: float) -> float | None:
    return float(math.ceil(x)) if math.isfinite(x) else None


def labels_for(
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


def _variances(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, fpc: bool) -> tuple[float, float]:
    """(rectifier variance, machine term's variance) of PPI++, as `estimators.mean_interval` computes them."""
    if fpc:
        _estimate, _se, lam = fpc_interval(y=y, yhat=yhat, yhat_all=yhat_all, lam=None)
    else:
        lam = ppi_plus_plus_lam(y=y, yhat=yhat, yhat_all=yhat_all)
    return float(np.var(y - lam * yhat, ddof=1)), 0.0 if fpc else float(lam**2 * np.var(yhat_all))


def plan_budget(
    *,
    table: UnitTable,
    sample: HumanSample | None = None,
    target_width: float | None = None,
    settle_share: float | None = None,
    alpha: float = 0.05,
    fpc: bool = False,
) -> BudgetPlan:
    """Labels needed (in all, pilot included) per run for `target_width`, and to settle `settle_share`;
    `fpc`: for intervals with the finite-population correction."""
    if target_width is None and settle_share is None:
        raise EstimationError("give a target width, a share of pairs to settle, or both")
    if target_width is not None and target_width <= 0:
        raise EstimationError(f"the target width must be positive, not {target_width}")
    if settle_share is not None and not 0 < settle_share <= 1:
        raise EstimationError(f"the share of pairs to settle must be in (0, 1], not {settle_share}")
    drawn, _pi, _design = sample_weights(table=table, sample=sample)
    plan = BudgetPlan(
        units=table.size, target_width=target_width, settle_share=settle_share, alpha=alpha, fpc=fpc
    )
    rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for i, run in enumerate(table.runs):
        present = ~np.isnan(table.machine[i])
        labelled = drawn & present & ~np.isnan(table.human[i])
        if labelled.sum() < 2:
            continue
        y, yhat, yhat_all = table.human[i][labelled], table.machine[i][labelled], table.machine[i][present]
        if np.ptp(y) == 0 and np.ptp(yhat_all) == 0:
            # The same value everywhere (a run that ranks nothing): its interval is 0 wide at any budget,
            # so it neither needs labels nor says anything about the labels the other runs need.
            plan.nothing_to_estimate.append(run)
            continue
        rows[run] = (table.human[i], table.machine[i], present)
        sigma2, imputed2 = _variances(y, yhat, yhat_all, fpc)
        n, big_n = int(labelled.sum()), len(yhat_all)
        variance = (1 - n / big_n) * sigma2 / n if fpc else sigma2 / n + imputed2 / big_n
        width_now = 2 * float(quantiles(alpha, n - 1)[1]) * math.sqrt(variance)
        needed = (
            labels_for(
                sigma2=sigma2,
                imputed2=imputed2,
                big_n=big_n,
                half_width=target_width / 2,
                alpha=alpha,
                fpc=fpc,
            )
            if target_width is not None
            else math.nan
        )
        plan.runs[run] = RunPlan(run=run, n_pilot=n, width_now=width_now, labels_needed=needed)
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
                    labels_for(
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
