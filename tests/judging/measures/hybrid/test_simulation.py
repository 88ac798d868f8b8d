"""Budget simulation on synthetic collections whose truth is known: coverage, width against classical,
and the active strategy narrower than uniform when the machine's confidence is informative."""

import numpy as np
import pytest

from judging.measures.hybrid.simulation import simulate


def synthetic(*, seed: int, units: int, runs: int):
    """Binary human labels; the machine a miscalibrated probability of them and its own confidence."""
    rng = np.random.default_rng(seed)
    truth, machine = [], []
    x = rng.normal(size=units)
    for k in range(runs):
        score = 2.5 * x + (k - runs / 2) * 0.4
        truth.append((rng.random(units) < 1 / (1 + np.exp(-score))).astype(float))
        machine.append(1 / (1 + np.exp(-(1.5 * score + 0.4))))  # over-confident and shifted
    machine_arr = np.array(machine)
    confidence = np.sqrt(np.mean(machine_arr * (1 - machine_arr), axis=0))
    return np.array(truth), machine_arr, confidence


@pytest.fixture(scope="module")
def result():
    truth, machine, confidence = synthetic(seed=11, units=10000, runs=4)
    return simulate(
        truth=truth, machine=machine, budgets=[150, 400], repeats=500, seed=3, uncertainty=confidence
    )


def test_every_valid_method_covers_at_the_nominal_level(result):
    for budget, methods in result.budgets.items():
        for method, figures in methods.items():
            assert 0.93 <= figures.coverage <= 0.97, (budget, method, figures)


def test_ppi_plus_plus_is_never_wider_than_classical(result):
    for methods in result.budgets.values():
        assert methods["ppi++"].width_ratio <= 1.01
        assert methods["ppi++"].mean_width <= methods["ppi"].mean_width * 1.01


def test_active_is_narrower_than_uniform_when_confidence_is_informative(result):
    for methods in result.budgets.values():
        assert methods["active"].mean_width < 0.97 * methods["ppi++"].mean_width


def test_a_useless_machine_costs_ppi_plus_plus_nothing():
    rng = np.random.default_rng(2)
    truth = rng.random((1, 3000))
    noise = rng.random((1, 3000))
    r = simulate(
        truth=truth, machine=noise, budgets=[200], repeats=300, seed=1, methods=["classical", "ppi", "ppi++"]
    )
    figures = r.budgets[200]
    assert figures["ppi"].width_ratio > 1.1  # plain PPI pays for a machine that knows nothing
    assert figures["ppi++"].width_ratio <= 1.02  # power tuning falls back to classical
    assert 0.93 <= figures["ppi++"].coverage <= 0.97


def test_it_is_reproducible_with_a_seed():
    truth, machine, confidence = synthetic(seed=1, units=500, runs=2)
    first = simulate(truth=truth, machine=machine, budgets=[50], repeats=50, seed=9, uncertainty=confidence)
    again = simulate(truth=truth, machine=machine, budgets=[50], repeats=50, seed=9, uncertainty=confidence)
    assert first.as_json() == again.as_json()
