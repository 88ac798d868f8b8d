"""Label- and system-level agreement figures against independent computations (scikit-learn,
krippendorff, scipy) and worked examples."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from judging.measures.agreement import (
    AgreementUndefined,
    binarise,
    encode_pairs,
    krippendorff_alpha_multi,
    label_agreement,
    rank_agreement,
)


def _random_pairs(seed: int, n: int = 5000, k: int = 5, topics: int = 20):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = np.clip(a + rng.integers(-1, 2, n) * (rng.random(n) < 0.4), 0, k - 1)
    t = rng.integers(0, topics, n)
    return a, b, t


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_it_equals_sklearn_and_krippendorff_on_random_ordinal_pairs(seed):
    a, b, t = _random_pairs(seed)
    result = label_agreement(
        encode_pairs(a=a, b=b, topics=t, labels=range(5)), ordinal=True, alpha_level="ordinal", resamples=200
    )
    assert result["n"] == len(a)
    assert result["exact_agreement"] == pytest.approx(np.mean(a == b))
    assert result["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b))
    assert result["weighted_kappa_linear"] == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert result["weighted_kappa_quadratic"] == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    expected_alpha = krippendorff.alpha(
        reliability_data=np.vstack([a, b]).astype(float), level_of_measurement="ordinal"
    )
    assert result["krippendorff_alpha"] == pytest.approx(expected_alpha)
    low, high = result["kappa_ci95"]
    assert low < result["cohen_kappa"] < high


def test_it_computes_nominal_alpha_like_krippendorff_with_string_labels():
    rng = np.random.default_rng(7)
    labels = ("NS", "PS", "FS")
    a = rng.choice(labels, 800)
    b = np.where(rng.random(800) < 0.7, a, rng.choice(labels, 800))
    result = label_agreement(
        encode_pairs(a=a, b=b, topics=["t"] * 800, labels=labels), ordinal=False, alpha_level="nominal"
    )
    codes = {label: i for i, label in enumerate(labels)}
    data = np.array([[codes[x] for x in a], [codes[x] for x in b]], dtype=float)
    assert result["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    )
    assert result["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=list(labels)))
    assert result["weighted_kappa_linear"] is None


def test_it_builds_the_confusion_matrix_with_rows_a_and_columns_b():
    # A says 1 where B says 0 twice; A says 0 where B says 1 once.
    result = label_agreement(
        encode_pairs(a=[1, 1, 0, 1, 0], b=[0, 0, 1, 1, 0], topics=["1"] * 5, labels=[0, 1]),
        ordinal=False,
        alpha_level="nominal",
    )
    assert result["confusion_matrix"] == [[1, 1], [2, 1]]
    assert result["confusion_row_shares"] == [[0.5, 0.5], [pytest.approx(2 / 3), pytest.approx(1 / 3)]]
    assert result["label_counts"] == {"a": [2, 3], "b": [3, 2]}


def test_it_matches_krippendorffs_worked_example_with_missing_labels():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example: alpha = 0.743.
    nan = np.nan
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    assert krippendorff_alpha_multi(np.array(data), "nominal") == pytest.approx(0.743, abs=5e-4)


def test_it_gives_the_per_topic_figures_of_each_topic_alone():
    a, b, t = _random_pairs(11, n=3000, topics=6)
    result = label_agreement(
        encode_pairs(a=a, b=b, topics=t, labels=range(5)), ordinal=True, alpha_level="ordinal"
    )
    assert [row["topic"] for row in result["per_topic"]] == [str(i) for i in range(6)]
    for row in result["per_topic"]:
        mask = t == int(row["topic"])
        assert row["n"] == mask.sum()
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(a[mask], b[mask]))
        assert row["weighted_kappa_quadratic"] == pytest.approx(
            cohen_kappa_score(a[mask], b[mask], weights="quadratic", labels=list(range(5)))
        )


def test_it_makes_the_bootstrap_reproducible_by_seed_and_resamples_topics():
    a, b, t = _random_pairs(5)
    pairs = encode_pairs(a=a, b=b, topics=t, labels=range(5))
    first = label_agreement(pairs, ordinal=True, alpha_level="ordinal", seed=42)["kappa_ci95"]
    again = label_agreement(pairs, ordinal=True, alpha_level="ordinal", seed=42)["kappa_ci95"]
    other = label_agreement(pairs, ordinal=True, alpha_level="ordinal", seed=43)["kappa_ci95"]
    assert first == again
    assert first != other
    # An independent topic bootstrap: resample topics, recompute kappa with sklearn, take percentiles.
    rng = np.random.default_rng(42)
    topics = np.unique(t)
    drawn = rng.integers(0, len(topics), size=(1000, len(topics)))
    kappas = []
    for row in drawn[:1000]:
        idx = np.concatenate([np.flatnonzero(t == topics[i]) for i in row])
        kappas.append(cohen_kappa_score(a[idx], b[idx]))
    assert first == pytest.approx(list(np.percentile(kappas, [2.5, 97.5])))


def test_it_binarises_relevance_at_a_threshold():
    a, b, t = _random_pairs(9)
    pairs = binarise(encode_pairs(a=a, b=b, topics=t, labels=range(5)), 2)
    result = label_agreement(pairs, ordinal=False, alpha_level="nominal")
    assert result["labels"] == [0, 1]
    assert result["cohen_kappa"] == pytest.approx(cohen_kappa_score(a >= 2, b >= 2))


def test_it_explains_undefined_kappa_when_both_judges_use_one_label():
    result = label_agreement(
        encode_pairs(a=[2, 2, 2], b=[2, 2, 2], topics=["1", "1", "2"], labels=range(5)),
        ordinal=True,
        alpha_level="ordinal",
    )
    assert result["exact_agreement"] == 1.0
    assert result["cohen_kappa"] is None
    assert result["weighted_kappa_quadratic"] is None
    assert result["krippendorff_alpha"] is None
    assert result["kappa_ci95"] is None
    assert any("same label" in note for note in result["notes"])
    assert any("alpha is undefined" in note for note in result["notes"])


def test_it_refuses_pairs_without_shared_units():
    with pytest.raises(AgreementUndefined, match="share no labelled units"):
        label_agreement(
            encode_pairs(a=[], b=[], topics=[], labels=[0, 1]), ordinal=False, alpha_level="nominal"
        )


def test_it_rejects_a_label_outside_the_scale():
    with pytest.raises(ValueError, match="label 7"):
        encode_pairs(a=[1, 7], b=[1, 1], topics=["1", "1"], labels=range(5))


def test_it_correlates_run_rankings_like_scipy():
    a = {"r1": 0.5, "r2": 0.4, "r3": 0.3, "r4": 0.3, "r5": 0.1, "only-a": 0.9}
    b = {"r1": 0.45, "r2": 0.47, "r3": 0.2, "r4": 0.25, "r5": 0.05, "only-b": 0.1}
    result = rank_agreement(scores_a=a, scores_b=b)
    runs = ["r1", "r2", "r3", "r4", "r5"]
    x, y = [a[r] for r in runs], [b[r] for r in runs]
    assert result["n_runs"] == 5
    assert result["kendall_tau_b"] == pytest.approx(stats.kendalltau(x, y).statistic)
    assert result["spearman_rho"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert result["only_a"] == ["only-a"] and result["only_b"] == ["only-b"]
    assert [row["run"] for row in result["runs"]] == ["r1", "r2", "r3", "r4", "r5"]
    assert [row["rank_a"] for row in result["runs"]] == [1, 2, 3, 3, 5]


def test_it_explains_rank_correlation_of_constant_scores():
    result = rank_agreement(
        scores_a={"r1": 0.2, "r2": 0.2, "r3": 0.2}, scores_b={"r1": 0.1, "r2": 0.3, "r3": 0.2}
    )
    assert result["kendall_tau_b"] is None and result["spearman_rho"] is None
    assert result["notes"] == ["Every run has the same score under one judge: rank correlation is undefined."]
