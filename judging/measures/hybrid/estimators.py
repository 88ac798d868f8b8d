"""Mean estimates with confidence intervals from human labels on a sample and machine labels on every unit.

The estimand is a population mean: the mean over all N units of the human value Y (a run's measure is the
mean of its per-unit values). Machine values Yhat are known on every unit; Y only on the sampled ones.

* **classical**: the human sample alone (mean and CLT interval, `ppi_py.classical_mean_ci`).
* **ppi**: prediction-powered inference, mean(Yhat over all units) + mean(Y - Yhat over the sample)
  (`ppi_py.ppi_mean_ci` with lam=1).
* **ppi++**: the same with the power-tuning weight lam chosen from the data (`ppi_py`, lam=None), which
  is never (asymptotically) wider than classical: lam=0 is classical.
* **active**: the inverse-probability-weighted estimator of active statistical inference (Zrnic and
  Candes, 2024), mean over all units of lam*Yhat_i + xi_i (Y_i - lam*Yhat_i) / pi_i, for a sample where
  unit i was drawn independently with known probability pi_i. `ppi_py` has no such estimator (its
  weights are normalised, which gives a ratio estimator, not this one), so it is written here; with
  equal probabilities its point estimate equals ppi_py's (tested).

On a sample drawn with unequal probabilities every method is computed with the weights (classical with
lam=0, ppi with lam=1, ppi++ and active with the tuned lam): unweighted means of such a sample would be
biased towards the units the sampler favoured.

The machine values of all N units stand in for `Yhat_unlabeled`, so the point estimate is the classic
difference estimator. By default the standard errors are ppi_py's (with the rectifier's variance over
n - 1): units are independent draws from an infinite population, which is conservative when the sample
is a large share of the N units. The interval's ends are not ppi_py's normal ones: `intervals` turns the
estimate and its standard error into a Student or Wilson interval clipped to the measure's range.

With `fpc=True` the intervals are design-based instead, for the mean over exactly these N units (what
Assay estimates: the score if the human had labelled every unit the machine labelled). The machine term
lam * mean(Yhat over N) is then a known constant, and only the rectifier varies with the draw:

* a uniform sample of fixed size n drawn without replacement: Var = (1 - n/N) S^2 / n, with S^2 the
  variance (n - 1 in the denominator) of Y - lam*Yhat over the sample (the classical mean's exact
  finite-population correction, applied to the rectifier);
* units drawn one by one with probabilities pi_i (Poisson sampling): the Horvitz-Thompson variance
  estimate sum over the sample of (1 - pi_i) / pi_i^2 * (Y_i - lam*Yhat_i)^2, over N^2.

lam is tuned to minimise that variance (cov(Y, Yhat) over the sample / var(Yhat) over the N units, and
its weighted analogue), clipped to [0, 1]; a unit drawn with certainty (pi = 1) adds no variance.

The estimators are written in closed form; the tests check them against ppi_py, scipy and statsmodels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.wording import plural
from judging.measures.hybrid.active import uniform_equivalent_n
from judging.measures.hybrid.intervals import Bounds, interval_ends

METHODS = ("classical", "ppi", "ppi++", "active")
# Below these sizes the intervals' coverage was not shown to hold (docs/statistics.md): fewer human-labelled
# units than the usual rule of thumb for a mean, or fewer labels of the rarer answer of a yes/no share.
MIN_UNITS = 30
MIN_POSITIVES = 5


class EstimationError(ValueError):
    """The interval cannot be computed as asked (no human labels, an unknown method, ...)."""


@dataclass(frozen=True)
class Estimate:
    estimate: float
    lo: float
    hi: float
    se: float
    lam: float
    n_human: int
    n_machine: int
    effective_n: float
    rule: str = "t"  # how the ends were found: "t", "wilson" or "census" (`intervals`)
    warning: str | None = None

    @property
    def width(self) -> float:
        return self.hi - self.lo

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci": [self.lo, self.hi],
            "n_human": self.n_human,
            "n_machine": self.n_machine,
            # null where the design has no uniform-sample equivalent (pair designs): NaN is not JSON.
            "effective_n": None if math.isnan(self.effective_n) else self.effective_n,
            "lam": self.lam,
            "interval": self.rule,
            "warning": self.warning,
        }


def z_value(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise EstimationError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def ppi_plus_plus_lam(*, y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> float:
    """ppi_py's power-tuning weight for a mean (its `_calc_lam_glm`, clipped to [0, 1]), in closed form."""
    n, big_n = len(y), len(yhat_all)
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var_hat = float(np.var(np.concatenate([yhat, yhat_all]), ddof=1))
    if var_hat <= 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var_hat), 0.0, 1.0))


def ipw_interval(
    *,
    y: np.ndarray,
    yhat: np.ndarray,
    pi: np.ndarray,
    yhat_all: np.ndarray,
    lam: float | None,
) -> tuple[float, float, float]:
    """(estimate, standard error, lam) of the weighted estimator; `lam=None` tunes it.

    The sampled units' terms are lam*Yhat + (Y - lam*Yhat)/pi, the others' lam*Yhat; the estimate is the
    mean of the N terms and its variance their variance over N. With terms written as lam*A + B, the
    variance-minimising lam is -cov(A, B)/var(A), clipped to [0, 1] as ppi_py clips its own.
    """
    big_n = len(yhat_all)
    # Sums over the N terms from the sample's contributions: an unsampled unit adds Yhat to A and 0 to B,
    # a sampled one Yhat(1 - 1/pi) and Y/pi.
    a_lab = yhat * (1 - 1 / pi)
    b_lab = y / pi
    sum_a = float(yhat_all.sum() - yhat.sum() + a_lab.sum())
    sum_aa = float((yhat_all**2).sum() - (yhat**2).sum() + (a_lab**2).sum())
    sum_b = float(b_lab.sum())
    sum_bb = float((b_lab**2).sum())
    sum_ab = float((a_lab * b_lab).sum())
    var_a = sum_aa / big_n - (sum_a / big_n) ** 2
    var_b = sum_bb / big_n - (sum_b / big_n) ** 2
    cov_ab = sum_ab / big_n - sum_a * sum_b / big_n**2
    if lam is None:
        lam = float(np.clip(-cov_ab / var_a, 0.0, 1.0)) if var_a > 0 else 0.0
    estimate = (lam * sum_a + sum_b) / big_n
    variance = max(lam**2 * var_a + 2 * lam * cov_ab + var_b, 0.0)
    return estimate, math.sqrt(variance / big_n), lam


def fpc_interval(
    *,
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_all: np.ndarray,
    lam: float | None,
    pi: np.ndarray | None = None,
) -> tuple[float, float, float]:
    """(estimate, design standard error, lam) for the mean over exactly the N units; `lam=None` tunes it.

    `pi` None: a uniform sample of fixed size without replacement; else Poisson sampling with these
    probabilities (see the module docstring for both variances).
    """
    n, big_n = len(y), len(yhat_all)
    if pi is None:
        if lam is None:
            var_all = float(np.var(yhat_all))
            cov = float(np.cov(y, yhat)[0, 1])
            lam = float(np.clip(cov / var_all, 0.0, 1.0)) if var_all > 0 else 0.0
        rect = y - lam * yhat
        estimate = lam * float(np.mean(yhat_all)) + float(np.mean(rect))
        variance = (1 - n / big_n) * float(np.var(rect, ddof=1)) / n
        return estimate, math.sqrt(max(variance, 0.0)), lam
    w = (1 - pi) / pi**2
    if lam is None:
        denom = float((w * yhat**2).sum())
        lam = float(np.clip((w * y * yhat).sum() / denom, 0.0, 1.0)) if denom > 0 else 0.0
    rect = y - lam * yhat
    estimate = (lam * float(yhat_all.sum()) + float((rect / pi).sum())) / big_n
    variance = float((w * rect**2).sum()) / big_n**2
    return estimate, math.sqrt(max(variance, 0.0)), lam


def mean_interval(
    *,
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_all: np.ndarray,
    method: str,
    alpha: float = 0.05,
    pi: np.ndarray | None = None,
    fpc: bool = False,
    bounds: Bounds = (0.0, 1.0),
) -> Estimate:
    """The interval of `method` for the mean over all units.

    `y`, `yhat`: human and machine values of the n sampled units; `yhat_all`: machine values of all N
    units (the sampled ones included, in any order). `pi`: the sampled units' inclusion probabilities when
    the sample was drawn unit by unit with known, possibly unequal, probabilities; None for a uniform
    random sample of fixed size. `fpc`: design-based intervals for the mean over these N units, with the
    finite-population correction (module docstring). `bounds`: the range of the values (None: unbounded);
    the interval's rule (Wilson or Student's t) and the clipping are `intervals.interval_ends`'.
    """
    if method not in METHODS:
        raise EstimationError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if not 0 < alpha < 1:
        raise EstimationError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    y, yhat, yhat_all = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_all))
    n, big_n = len(y), len(yhat_all)
    if n < 2:
        raise EstimationError(f"an interval needs at least 2 human labels, got {n}")
    if len(yhat) != n:
        raise EstimationError("y and yhat must have the same length")
    if big_n < n:
        raise EstimationError("yhat_all must hold every unit, the sampled ones included")
    if method == "active" and pi is None and not fpc:
        pi = np.full(n, n / big_n)
    if pi is not None:
        pi = np.asarray(pi, dtype=float)
        if len(pi) != n or np.any(pi <= 0) or np.any(pi > 1):
            raise EstimationError("inclusion probabilities must be in (0, 1], one per sampled unit")
    fixed = {"classical": 0.0, "ppi": 1.0}.get(method)
    se_srs = math.sqrt(float(np.var(y, ddof=1)) / n)
    if fpc:
        estimate, se, lam = fpc_interval(y=y, yhat=yhat, yhat_all=yhat_all, lam=fixed, pi=pi)
    elif pi is not None:
        estimate, se, lam = ipw_interval(y=y, yhat=yhat, pi=pi, yhat_all=yhat_all, lam=fixed)
    else:
        # ppi_py's estimators in closed form (tested equal); the rectifier's variance with n - 1, as
        # Student's interval wants it.
        lam = fixed if fixed is not None else ppi_plus_plus_lam(y=y, yhat=yhat, yhat_all=yhat_all)
        rect = y - lam * yhat
        estimate = lam * float(np.mean(yhat_all)) + float(np.mean(rect))
        se = math.sqrt(lam**2 * float(np.var(yhat_all)) / big_n + float(np.var(rect, ddof=1)) / n)
    binary = bool(np.all((y == 0) | (y == 1)))
    census = fpc and n == big_n
    est, lo, hi, wilson = interval_ends(
        estimate=estimate,
        se=se,
        se_srs=se_srs,
        n=n,
        binary=binary,
        identical=bool(np.ptp(y) == 0),
        census=census,
        alpha=alpha,
        bounds=bounds,
    )
    return Estimate(
        estimate=float(est),
        lo=float(lo),
        hi=float(hi),
        se=se,
        lam=lam,
        n_human=n,
        n_machine=big_n,
        effective_n=uniform_equivalent_n(y=y, se=se, n=n, pi=pi, big_n=big_n if fpc else None),
        rule="census" if census else ("wilson" if bool(wilson) else "t"),
        warning=None if census else small_sample_warning(n=n, positives=_positives(y) if binary else None),
    )


def _positives(y: np.ndarray) -> int:
    """The rarer of the two answers' count: a share near 1 is as hard to bound as one near 0."""
    ones = int(np.sum(y == 1))
    return min(ones, len(y) - ones)


def small_sample_warning(*, n: int, positives: int | None = None) -> str | None:
    """Why the interval's coverage is not shown to hold at this size, or None when it is."""
    reasons = []
    if n < MIN_UNITS:
        reasons.append(f"{plural(n, 'human-labelled unit')} (fewer than {MIN_UNITS})")
    if positives is not None and positives < MIN_POSITIVES:
        reasons.append(f"{plural(positives, 'label')} of the rarer answer (fewer than {MIN_POSITIVES})")
    if not reasons:
        return None
    return "coverage not shown to hold at " + " and ".join(reasons) + ": treat the interval as a rough guide"
