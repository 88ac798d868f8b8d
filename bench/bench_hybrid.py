"""simulate_budget's engine on 20,000 (turn, passage) pairs, 4 budgets, 1,000 repeats, every method.

The baseline, timed in the same invocation, is the same simulation done the plain way for a tenth of the
repeats: a loop calling ppi_py's `ppi_mean_ci` (PPI++), scaled up to 1,000 repeats. The figures of both
are printed, with the ratio. Target: the vectorised simulation in under 30 s. Pure numpy, no database.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")

import django  # noqa: E402
import numpy as np  # noqa: E402

# The simulation module sits beside the unit tables, which import models: the app registry must be ready.
django.setup()

from judging.measures.hybrid.simulation import simulate  # noqa: E402

PAIRS, BUDGETS, REPEATS, BASELINE_REPEATS = 20_000, (100, 200, 500, 1000), 1000, 100


def collection(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human grades >= 2 (truth), an over-confident machine probability of them, its uncertainty."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=PAIRS)
    truth = (rng.random(PAIRS) < 1 / (1 + np.exp(-(2.5 * x - 1)))).astype(float)
    machine = 1 / (1 + np.exp(-(3.5 * x - 1)))
    return truth[None, :], machine[None, :], np.sqrt(machine * (1 - machine))


def baseline(truth: np.ndarray, machine: np.ndarray) -> float:
    """Seconds for the PPI++ part of the simulation with a loop over ppi_py, at BASELINE_REPEATS."""
    from ppi_py import ppi_mean_ci

    rng = np.random.default_rng(1)
    start = time.perf_counter()
    for budget in BUDGETS:
        for _ in range(BASELINE_REPEATS):
            idx = rng.choice(PAIRS, budget, replace=False)
            ppi_mean_ci(truth[0, idx], machine[0, idx], machine[0], alpha=0.05, lam=None)
    return time.perf_counter() - start


def main() -> None:
    truth, machine, uncertainty = collection()
    import ppi_py  # noqa: F401  (its numba start-up is not the simulation's cost)

    start = time.perf_counter()
    result = simulate(
        truth=truth, machine=machine, budgets=BUDGETS, repeats=REPEATS, seed=0, uncertainty=uncertainty
    )
    ours = time.perf_counter() - start
    loop = baseline(truth, machine) * REPEATS / BASELINE_REPEATS

    print(f"simulate_budget engine: {PAIRS:,} pairs, budgets {list(BUDGETS)}, {REPEATS:,} repeats, 4 methods")
    print(f"{'budget':>6}  {'method':<9}  coverage  mean_width  width_ratio")
    for budget, methods in result.budgets.items():
        for method, f in methods.items():
            print(f"{budget:>6}  {method:<9}  {f.coverage:8.3f}  {f.mean_width:10.4f}  {f.width_ratio:11.3f}")
    print(f"vectorised, all 4 methods:          {ours:7.2f} s (target < 30 s)")
    print(
        f"ppi_py loop, PPI++ only (scaled):   {loop:7.2f} s ({BASELINE_REPEATS} repeats timed, x{REPEATS // BASELINE_REPEATS})"
    )
    print(f"ratio loop / vectorised:            {loop / ours:7.1f}x")
    assert ours < 30, f"too slow: {ours:.1f} s"


if __name__ == "__main__":
    main()
