"""The quality dashboard's statistics against their references: scipy's Wilson interval, numpy's median."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from judging.measures.quality import (
    Bin,
    bin_agreement,
    drifted,
    median,
    run_number,
    share_below,
    wilson_interval,
)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (3, 10), (7, 10), (10, 10), (1, 50), (41, 97)])
def test_it_gives_the_wilson_interval_scipy_gives(k, n):
    reference = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((reference.low, reference.high), abs=1e-9)


def test_it_has_no_interval_without_observations_and_refuses_impossible_counts():
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(4, 3)


@pytest.mark.parametrize("values", [[3.0], [1.0, 9.0], [5.0, 1.0, 2.0], [4.0, 4.0, 1.0, 8.0, 2.5]])
def test_it_gives_numpys_median(values):
    assert median(values) == pytest.approx(float(np.median(values)))
    assert median([]) is None


def test_it_counts_the_share_strictly_below_the_threshold():
    assert share_below([1.0, 2.0, 3.0, 4.0], 3.0) == 0.5
    assert share_below([], 3.0) is None


def test_it_bins_agreement_by_key_in_the_order_first_seen():
    keys = ["mon", "mon", "tue", "mon", "wed"]
    agreed = [True, False, True, True, False]
    assert bin_agreement(keys, agreed) == [Bin("mon", 3, 2), Bin("tue", 1, 1), Bin("wed", 1, 0)]
    assert [run_number(i) for i in (0, 99, 100, 250)] == [0, 0, 100, 200]


def test_it_calls_a_fall_in_agreement_drift_only_over_bins_with_enough_comparisons():
    steady = [Bin(0, 20, 18), Bin(100, 20, 17)]
    falling = [Bin(0, 20, 18), Bin(100, 3, 0), Bin(200, 20, 10)]
    assert not drifted(steady, min_n=10, drop=0.2)
    assert drifted(falling, min_n=10, drop=0.2)  # 0.9 -> 0.5
    assert not drifted(falling[:2], min_n=10, drop=0.2)  # the small bin does not count
