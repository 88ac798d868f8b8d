"""What a simulated budget reports for each method: coverage (mean and worst run, with its Monte Carlo
error), mean width and its ratio to the classical interval's; shared by the whole-turn, stratified-pair and
two-stage simulators."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class MethodFigures:
    """One method at one budget. The means are over the runs with something to estimate; `run_widths`
    holds every run's mean width (not 0 for a run whose values are the same on every unit: the sample alone
    cannot show that)."""

    coverage: float
    mean_width: float
    width_ratio: float
    coverage_mc_se: float
    worst_run_coverage: float
    run_widths: list[float] = field(default_factory=list)
    warning: str | None = None

    @property
    def mc_error(self) -> float:
        """The Monte Carlo standard error of `coverage`, under the name the reports use."""
        return self.coverage_mc_se

    def as_dict(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "mean_width": self.mean_width,
            "width_ratio": self.width_ratio,
            "coverage_mc_se": self.coverage_mc_se,
            "mc_error": self.mc_error,
            "worst_run_coverage": self.worst_run_coverage,
            "run_widths": self.run_widths,
            "warning": self.warning,
        }


def method_figures(
    *,
    hits: dict[str, np.ndarray],
    widths: dict[str, np.ndarray],
    repeats: int,
    warning: str | None,
    varies: np.ndarray | None = None,
) -> dict[str, MethodFigures]:
    """Each method's figures at one budget from its per-run counts of covering draws and summed widths;
    `varies` keeps the runs with something to estimate in the means (all by default)."""
    keep = slice(None) if varies is None else varies
    base = widths.get("classical")
    base_width = float((base / repeats)[keep].mean()) if base is not None else 0.0
    figures = {}
    for method, covered in hits.items():
        per_run = covered[keep] / repeats
        run_widths = widths[method] / repeats
        coverage = float(per_run.mean())
        mean_width = float(run_widths[keep].mean())
        figures[method] = MethodFigures(
            coverage=coverage,
            mean_width=mean_width,
            width_ratio=mean_width / base_width if base_width else math.nan,
            coverage_mc_se=math.sqrt(max(coverage * (1 - coverage), 1e-12) / repeats),
            worst_run_coverage=float(per_run.min()),
            run_widths=[float(w) for w in run_widths],
            warning=warning,
        )
    return figures
