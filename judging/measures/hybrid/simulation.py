"""How wide the intervals are, and how often they hold the truth, for a given human budget.

The human labels present are taken as the full truth. For each budget the simulation draws `repeats`
human samples (uniform samples of fixed size for classical, ppi and ppi++; unit-by-unit samples with the
uncertainty strategy's probabilities for active), computes every method's interval for every run from
the sample and the machine values, and counts how often the interval holds the run's true mean.

Everything is vectorised over repeats and runs; the formulas are those of `estimators` (the tests check
them against `estimators.mean_interval` and ppi_py on the same samples).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.wording import plural
from judging.measures.hybrid.active import (
    ActiveVerdict,
    correction_from_machine,
    correction_from_pilot,
    verdict,
)
from judging.measures.hybrid.estimators import METHODS, EstimationError, small_sample_warning
from judging.measures.hybrid.figures import MethodFigures, method_figures
from judging.measures.hybrid.intervals import Bounds, interval_ends, measure_bounds
from judging.measures.hybrid.sampling import disagreement, inclusion_probabilities
from judging.measures.hybrid.table import UnitTable

# Elements per block of (runs x repeats x sample) arrays: keeps memory near 64 MB whatever the sizes.
BLOCK = 8_000_000


@dataclass
class SimulationResult:
    """`runs` counts every run; `constant_runs` are the positions of those with nothing to estimate."""

    units: int
    runs: int
    repeats: int
    alpha: float
    seed: int
    budgets: dict[int, dict[str, MethodFigures]] = field(default_factory=dict)
    constant_runs: list[int] = field(default_factory=list)
    fpc: bool = False
    warnings: dict[int, str] = field(default_factory=dict)  # budget: why its coverage is not shown to hold
    # budget: what the draws held when the design does not fix it (two-stage: turns, mean pairs drawn)
    draws: dict[int, dict[str, float]] = field(default_factory=dict)

    @property
    def estimated_runs(self) -> int:
        return self.runs - len(self.constant_runs)

    def as_json(self) -> dict[str, Any]:
        extra = {"draws": {str(b): d for b, d in self.draws.items()}} if self.draws else {}
        return extra | {
            "units": self.units,
            "runs": self.runs,
            "constant_runs": self.constant_runs,
            "repeats": self.repeats,
            "alpha": self.alpha,
            "seed": self.seed,
            "fpc": self.fpc,
            "warnings": {str(b): w for b, w in self.warnings.items()},
            "budgets": {
                str(b): {m: f.as_dict() for m, f in methods.items()} for b, methods in self.budgets.items()
            },
        }


def _uniform_intervals(
    y: np.ndarray, yh: np.ndarray, machine: np.ndarray, methods: Sequence[str], fpc: bool = False
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(estimate, standard error) per method, arrays (runs, repeats); y and yh are (runs, repeats, n).

    The formulas of `estimators.mean_interval` (and `fpc_interval` with `fpc`), the rectifier's variance
    over n - 1."""
    n, big_n = y.shape[-1], machine.shape[-1]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    my, mh = y.mean(-1), yh.mean(-1)
    vy, vh = y.var(-1), yh.var(-1)
    cov = (y * yh).mean(-1) - my * mh
    m_all = machine.mean(-1)[:, None]
    v_all = machine.var(-1)[:, None]
    ddof = n / (n - 1)
    for method in methods:
        if method == "classical":
            lam: Any = np.zeros_like(my)
        elif method == "ppi":
            lam = np.ones_like(my)
        elif fpc:
            with np.errstate(divide="ignore", invalid="ignore"):
                lam = np.clip(np.where(v_all > 0, cov * ddof / v_all, 0.0), 0.0, 1.0)
        else:
            # ppi_py's lam: the sample covariance over (1 + n/N) times the variance of the pooled predictions.
            s1 = yh.sum(-1) + machine.sum(-1)[:, None]
            s2 = (yh**2).sum(-1) + (machine**2).sum(-1)[:, None]
            pooled_var = (s2 - s1**2 / (n + big_n)) / (n + big_n - 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                lam = np.where(pooled_var > 0, cov / ((1 + n / big_n) * pooled_var), 0.0)
            lam = np.clip(lam, 0.0, 1.0)
        v_rect = np.maximum(vy - 2 * lam * cov + lam**2 * vh, 0) * ddof
        est = lam * m_all + my - lam * mh
        if fpc:
            out[method] = (est, np.sqrt((1 - n / big_n) * v_rect / n))
        else:
            out[method] = (est, np.sqrt(lam**2 * v_all / big_n + v_rect / n))
    return out


def _active_intervals(
    xi: np.ndarray, truth: np.ndarray, machine: np.ndarray, pi: np.ndarray, fpc: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(estimate, standard error), arrays (runs, repeats), of the tuned weighted estimator; xi is (repeats, N),
    1.0 where a unit is drawn.

    With `fpc` the Horvitz-Thompson variance of `estimators.fpc_interval` for Poisson sampling."""
    big_n = machine.shape[-1]
    k = machine.shape[0]
    if fpc:
        w = (1 - pi) / pi**2
        columns = np.concatenate(
            [w * truth * machine, w * machine**2, w * truth**2, truth / pi, machine / pi]
        )
        sums = xi @ columns.T
        s_yh, s_hh, s_yy, s_y, s_h = (sums[:, i * k : (i + 1) * k].T for i in range(5))
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.clip(np.where(s_hh > 0, s_yh / s_hh, 0.0), 0.0, 1.0)
        est = (lam * machine.sum(-1)[:, None] + s_y - lam * s_h) / big_n
        var = np.maximum(s_yy - 2 * lam * s_yh + lam**2 * s_hh, 0.0) / big_n**2
        return est, np.sqrt(var)
    a_lab = machine * (1 - 1 / pi)
    b_lab = truth / pi
    columns = np.concatenate([machine, machine**2, a_lab, a_lab**2, b_lab, b_lab**2, a_lab * b_lab], axis=0)
    sums = xi @ columns.T  # (repeats, 7 * runs)
    s_h, s_hh, s_a, s_aa, s_b, s_bb, s_ab = (sums[:, i * k : (i + 1) * k].T for i in range(7))
    sum_a = machine.sum(-1)[:, None] - s_h + s_a
    sum_aa = (machine**2).sum(-1)[:, None] - s_hh + s_aa
    var_a = sum_aa / big_n - (sum_a / big_n) ** 2
    var_b = s_bb / big_n - (s_b / big_n) ** 2
    cov_ab = s_ab / big_n - sum_a * s_b / big_n**2
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var_a > 0, -cov_ab / var_a, 0.0)
    lam = np.clip(lam, 0.0, 1.0)
    est = (lam * sum_a + s_b) / big_n
    var = np.maximum(lam**2 * var_a + 2 * lam * cov_ab + var_b, 0.0)
    return est, np.sqrt(var / big_n)


def _sample_shape(x: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, ...]:
    """(n, se_srs, binary, identical), arrays (runs, repeats), of unit-by-unit samples; x is xi as floats."""
    k = truth.shape[0]
    columns = np.concatenate([truth, truth**2, ((truth != 0) & (truth != 1)).astype(float)])
    sums = x @ columns.T
    s1, s2, not_binary = (sums[:, i * k : (i + 1) * k].T for i in range(3))
    n = np.broadcast_to(x.sum(1)[None, :], s1.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.maximum(s2 - s1**2 / n, 0.0) / (n - 1)
        se_srs = np.sqrt(var / n)
    return n, se_srs, not_binary == 0, var <= 1e-15


def simulate(
    *,
    truth: np.ndarray,
    machine: np.ndarray,
    budgets: Sequence[int],
    repeats: int,
    seed: int = 0,
    alpha: float = 0.05,
    uncertainty: np.ndarray | None = None,
    methods: Sequence[str] = METHODS,
    fpc: bool = False,
    bounds: Bounds = (0.0, 1.0),
) -> SimulationResult:
    """Coverage and mean width of every method's interval for every budget.

    `truth` and `machine` are (runs, units) arrays of the human and machine values; a run's true score is
    its mean of `truth`. `uncertainty` (units,) drives the active method's sampling probabilities; without
    it the active method samples uniformly (unit by unit). Coverage and mean width are over repeats and
    the runs whose values vary across units; each run's own mean width is kept as well. `fpc` and
    `bounds` as in `estimators.mean_interval`: the intervals simulated are the ones `estimate` prints.
    """
    truth = np.atleast_2d(np.asarray(truth, dtype=float))
    machine = np.atleast_2d(np.asarray(machine, dtype=float))
    if truth.shape != machine.shape:
        raise EstimationError("truth and machine values must have the same shape")
    if np.isnan(truth).any() or np.isnan(machine).any():
        raise EstimationError("the simulation needs a human and a machine value on every unit")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise EstimationError(f"methods must be among {', '.join(METHODS)}, not {', '.join(unknown)}")
    k, big_n = truth.shape
    if repeats < 1:
        raise EstimationError("repeats must be at least 1")
    bad = [b for b in budgets if not 2 <= b <= big_n]
    if bad:
        raise EstimationError(f"budgets must lie between 2 and the {plural(big_n, 'unit')}, not {bad}")
    if not 0 < alpha < 1:
        raise EstimationError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    # A run with the same human and the same machine value on every unit (a run that ranks nothing scores
    # 0 everywhere) has a zero-width interval that always covers: counted in the means it would make every
    # method look narrower and surer than it is on the runs there is something to estimate for.
    varies = (np.ptp(truth, axis=1) > 0) | (np.ptp(machine, axis=1) > 0)
    if not varies.any():
        raise EstimationError(
            "every run has the same human and machine value on every unit: there is nothing to estimate"
        )
    target = truth.mean(-1)[:, None]
    rng = np.random.default_rng(seed)
    result = SimulationResult(
        units=big_n,
        runs=k,
        repeats=repeats,
        alpha=alpha,
        seed=seed,
        constant_runs=[int(i) for i in np.flatnonzero(~varies)],
        fpc=fpc,
    )
    ordered = sorted(set(budgets))
    largest = ordered[-1]
    # Classical always: every method's width ratio is against it, whichever methods are reported.
    uniform_methods = [m for m in METHODS if m != "active" and (m in methods or m == "classical")]
    hits: dict[tuple[int, str], np.ndarray] = {}
    widths: dict[tuple[int, str], np.ndarray] = {}

    def record(
        budget: int, method: str, est: np.ndarray, se: np.ndarray, shape: tuple[np.ndarray, ...]
    ) -> None:
        n, se_srs, binary, identical = shape
        est, lo, hi, _wilson = interval_ends(
            estimate=est,
            se=se,
            se_srs=se_srs,
            n=n,
            binary=binary,
            identical=identical,
            census=fpc & (n == big_n),
            alpha=alpha,
            bounds=bounds,
        )
        # A unit-by-unit sample with fewer than 2 units has no interval: counted as the whole range.
        few = n < 2
        lo = np.where(few, bounds[0] if bounds else -np.inf, lo)
        hi = np.where(few, bounds[1] if bounds else np.inf, hi)
        # A census's estimate is the target up to rounding.
        covered = ((lo - 1e-12 <= target) & (target <= hi + 1e-12)).sum(-1)
        hits[(budget, method)] = hits.get((budget, method), np.zeros(k)) + covered
        widths[(budget, method)] = widths.get((budget, method), np.zeros(k)) + (hi - lo).sum(-1)

    chunk = max(1, min(repeats, BLOCK // max(1, big_n + k * largest)))
    probabilities = {
        b: (
            inclusion_probabilities(uncertainty=uncertainty, budget=b)
            if uncertainty is not None
            else np.full(big_n, b / big_n)
        )
        for b in ordered
    }
    done = 0
    while done < repeats:
        size = min(chunk, repeats - done)
        done += size
        # Drawn whether or not a uniform method is asked for, so that each method's figures do not
        # depend on which others are asked (the budget page runs them all, the command those named).
        keys = rng.random((size, big_n))
        if uniform_methods:
            # The `largest` smallest of N random keys, in key order: their first b are a uniform sample
            # of size b for every budget b, so one draw serves all budgets.
            head = np.argpartition(keys, largest - 1, axis=1)[:, :largest]
            head = np.take_along_axis(head, np.argsort(np.take_along_axis(keys, head, 1), axis=1), 1)
            for b in ordered:
                idx = head[:, :b]
                y, yh = truth[:, idx], machine[:, idx]
                shape = (
                    np.full(y.shape[:-1], b),
                    np.sqrt(y.var(-1, ddof=1) / b),
                    ((y == 0) | (y == 1)).all(-1),
                    np.ptp(y, axis=-1) == 0,
                )
                for method, (est, se) in _uniform_intervals(y, yh, machine, uniform_methods, fpc).items():
                    record(b, method, est, se, shape)
        if "active" in methods:
            keys = rng.random((size, big_n))
            for b in ordered:
                pi = probabilities[b]
                xi = (keys < pi).astype(float)
                est, se = _active_intervals(xi, truth, machine, pi, fpc)
                record(b, "active", est, se, _sample_shape(xi, truth))

    # The rarer answer's expected count in a sample of b units, for the runs whose values are yes/no (and
    # not all the same: a sample of those always covers).
    binary_runs = ((truth == 0) | (truth == 1)).all(-1) & (np.ptp(truth, axis=1) > 0)
    share = truth[binary_runs].mean(-1) if binary_runs.any() else np.array([])
    rarer = float(np.minimum(share, 1 - share).min()) if share.size else None
    warnings = {
        b: w
        for b in ordered
        if (w := small_sample_warning(n=b, positives=None if rarer is None else math.floor(b * rarer)))
        and not (fpc and b == big_n)
    }
    result.warnings = {b: warnings[b] for b in ordered if b in warnings}
    for b in ordered:
        result.budgets[b] = method_figures(
            hits={m: hits[(b, m)] for m in methods},
            widths={m: widths[(b, m)] for m in dict.fromkeys(["classical", *methods]) if (b, m) in widths},
            repeats=repeats,
            warning=warnings.get(b),
            varies=varies,
        )
    return result


@dataclass
class BudgetSimulation:
    """`simulate` over a judges' unit table: the fully labelled units it ran on, what it left out, and how
    the active method sampled."""

    table: UnitTable  # the units with a human and a machine value for every run
    result: SimulationResult
    left_out: list[int]  # budgets above the fully labelled units
    active_sampling: str
    active_verdict: ActiveVerdict | None = None


def budget_simulate(
    *,
    table: UnitTable,
    budgets: Sequence[int],
    repeats: int,
    alpha: float = 0.05,
    seed: int = 0,
    confidence: Sequence[UnitTable] = (),
    methods: Sequence[str] = METHODS,
    fpc: bool = False,
    active_from: str = "machine",
) -> BudgetSimulation:
    """Simulate the budgets on the units of `table` that have every value, as the budget page and
    `simulate_budget` both show it.

    `confidence` holds the same measure with other judges in the human seat (built like `table`); their
    disagreement with the machine drives the active method's sampling; without them the expected size of
    the human-machine correction does (`active`), predicted from the machine's values (`active_from`
    "machine") or from a uniform pilot of `PILOT_UNITS` units of the table ("pilot"). Budgets
    above the fully labelled units cannot be drawn: they are left out and named, and only when none is
    left is that an error.
    """
    complete = table.complete()
    if complete.size < 2:
        raise EstimationError(
            f"only {plural(complete.size, 'unit')} {'has' if complete.size == 1 else 'have'} human and "
            "machine values: nothing to simulate"
        )
    usable = sorted({b for b in budgets if 2 <= b <= complete.size})
    left_out = sorted({b for b in budgets if b > complete.size})
    if not usable:
        raise EstimationError(
            f"budgets must lie between 2 and the {plural(complete.size, 'fully labelled unit')}, "
            f"not {sorted(set(budgets))}"
        )
    if confidence:
        keep = np.isin(table.keys, complete.keys)
        others = [other.human[:, keep] for other in confidence]
        uncertainty = disagreement(machine=complete.machine, others=others)
        active = "uncertainty"
    else:
        uncertainty, active = _expected_correction(complete, active_from, seed)
    result = simulate(
        truth=complete.human,
        machine=complete.machine,
        budgets=usable,
        repeats=repeats,
        seed=seed,
        alpha=alpha,
        uncertainty=uncertainty,
        methods=methods,
        fpc=fpc,
        bounds=measure_bounds(table.measure),
    )
    return BudgetSimulation(
        table=complete,
        result=result,
        left_out=left_out,
        active_sampling=active,
        active_verdict=verdict(budgets=result.budgets, alpha=alpha),
    )


PILOT_UNITS = 30
ACTIVE_FROM = ("machine", "pilot")


def _expected_correction(table: UnitTable, active_from: str, seed: int) -> tuple[np.ndarray, str]:
    """The active design's per-unit size of the correction, and how it was predicted."""
    if active_from not in ACTIVE_FROM:
        raise EstimationError(f"active_from must be one of {', '.join(ACTIVE_FROM)}, not {active_from!r}")
    if active_from == "machine":
        return correction_from_machine(table.machine), "expected correction, from the machine's values"
    size = min(PILOT_UNITS, table.size)
    pilot = np.random.default_rng(seed).choice(table.size, size=size, replace=False)
    human = np.full(table.human.shape, np.nan)
    human[:, pilot] = table.human[:, pilot]
    return (
        correction_from_pilot(human=human, machine=table.machine),
        f"expected correction, from a uniform pilot of {plural(size, 'unit')}",
    )
