"""Per-topic agreement of two evaluations of the same runs: Kendall's tau-b and Pearson's r on each topic
equal scipy's on that topic's run scores, the spread equals numpy's quantiles, and an undefined figure is
None with its reason, left out of the spread."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judging.measures.topic_agreement import TIES, spread, topic_agreement


def _per_topic(scores: np.ndarray, runs: list[str], topics: list[str]) -> dict[str, dict[str, float]]:
    return {
        run: {t: float(v) for t, v in zip(topics, row, strict=True)}
        for run, row in zip(runs, scores, strict=True)
    }


def test_it_gives_each_topic_scipys_tau_b_and_pearson_r_over_the_runs():
    rng = np.random.default_rng(4)
    runs, topics = [f"run-{i}" for i in range(7)], ["2", "10", "1"]
    a = rng.random((7, 3))
    b = np.clip(a + rng.normal(0, 0.2, (7, 3)), 0, 1)
    b[0, 0] = b[1, 0]  # a tie under B on topic "2": tau-b, not tau-a

    result = topic_agreement(per_topic_a=_per_topic(a, runs, topics), per_topic_b=_per_topic(b, runs, topics))

    assert [row["topic"] for row in result["topics"]] == ["1", "2", "10"]
    for row in result["topics"]:
        column = topics.index(row["topic"])
        assert row["runs"] == 7
        assert row["kendall_tau_b"] == pytest.approx(
            stats.kendalltau(a[:, column], b[:, column]).statistic, abs=1e-12
        )
        assert row["pearson_r"] == pytest.approx(
            stats.pearsonr(a[:, column], b[:, column]).statistic, abs=1e-12
        )
    taus = [row["kendall_tau_b"] for row in result["topics"]]
    q1, median, q3 = np.quantile(taus, [0.25, 0.5, 0.75])
    assert result["kendall_tau_b"] == pytest.approx(
        {
            "topics": 3,
            "mean": np.mean(taus),
            "sd": np.std(taus, ddof=1),
            "minimum": min(taus),
            "q1": q1,
            "median": median,
            "q3": q3,
            "maximum": max(taus),
        }
    )
    assert result["notes"] == []


def test_it_compares_on_each_topic_only_the_runs_both_evaluations_scored():
    a = {"r1": {"t": 0.1}, "r2": {"t": 0.5}, "r3": {"t": 0.9}, "r4": {"t": 0.3}}
    b = {"r1": {"t": 0.2}, "r2": {"t": 0.4}, "r3": {"t": 0.8}, "r5": {"t": 0.0, "u": 1.0}}

    result = topic_agreement(per_topic_a=a, per_topic_b=b)

    (row,) = result["topics"]
    assert (row["topic"], row["runs"], row["kendall_tau_b"]) == ("t", 3, pytest.approx(1.0))
    assert (result["only_a"], result["only_b"]) == ([], ["u"])


def test_it_leaves_undefined_topics_out_of_the_spread_and_says_why():
    a = {
        "r1": {"tied": 0.5, "few": 0.1, "ok": 0.1},
        "r2": {"tied": 0.5, "few": 0.2, "ok": 0.2},
        "r3": {"tied": 0.5, "ok": 0.3},
    }
    b = {
        "r1": {"tied": 0.1, "few": 0.3, "ok": 0.3},
        "r2": {"tied": 0.2, "few": 0.1, "ok": 0.2},
        "r3": {"tied": 0.3, "ok": 0.1},
    }

    result = topic_agreement(per_topic_a=a, per_topic_b=b)

    by_topic = {row["topic"]: row for row in result["topics"]}
    assert (by_topic["tied"]["kendall_tau_b"], by_topic["tied"]["reason"]) == (None, TIES)
    assert (by_topic["few"]["pearson_r"], by_topic["few"]["reason"]) == (None, "2 runs under both")
    assert by_topic["ok"]["kendall_tau_b"] == pytest.approx(-1.0)
    assert result["kendall_tau_b"]["topics"] == 1 and result["kendall_tau_b"]["sd"] is None
    assert result["notes"] == [
        "2 of 3 topics have no per-topic figure (fewer than 3 runs under both evaluations, or every run tied "
        "under one): left out of the spread."
    ]


def test_it_has_no_spread_without_values():
    assert spread([]) is None
    assert topic_agreement(per_topic_a={}, per_topic_b={})["kendall_tau_b"] is None


def test_it_orders_a_topic_named_with_a_digit_int_cannot_read():
    # "²" is a digit to str.isdigit but not a number int() reads: a topic so named must still sort.
    runs, topics = ["r1", "r2", "r3"], ["²", "10", "2"]
    scores = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.9, 0.8]])

    result = topic_agreement(
        per_topic_a=_per_topic(scores, runs, topics), per_topic_b=_per_topic(scores, runs, topics)
    )

    assert [row["topic"] for row in result["topics"]] == ["2", "10", "²"]
