"""Label-level agreement on 1,000,000 label pairs (5 labels, 200 topics, 1,000 bootstrap resamples).

Prints the time of every label-level figure (encoding, exact agreement, Cohen's kappa, linear and
quadratic weighted kappa, ordinal Krippendorff's alpha, confusion matrix, per-topic figures, the
bootstrap interval over topics, and the binary view at grade >= 2) beside scikit-learn's
`cohen_kappa_score` alone on the same pairs. Target: under 3 s. Pure numpy, no database.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from sklearn.metrics import cohen_kappa_score  # noqa: E402

from judging.measures.agreement import binarise, encode_pairs, label_agreement  # noqa: E402

PAIRS, LABELS, TOPICS, RESAMPLES, REPEATS = 1_000_000, 5, 200, 1000, 3


def all_figures(a: np.ndarray, b: np.ndarray, topics: np.ndarray) -> dict:
    pairs = encode_pairs(a=a, b=b, topics=topics, labels=range(LABELS))
    result = label_agreement(pairs, ordinal=True, alpha_level="ordinal", resamples=RESAMPLES, seed=0)
    result["binary"] = label_agreement(
        binarise(pairs, 2), ordinal=False, alpha_level="nominal", resamples=RESAMPLES
    )
    return result


def best_of(function, *args) -> tuple[float, object]:
    times, value = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = function(*args)
        times.append(time.perf_counter() - start)
    return min(times), value


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, LABELS, PAIRS)
    b = np.clip(a + rng.integers(-1, 2, PAIRS) * (rng.random(PAIRS) < 0.5), 0, LABELS - 1)
    topics = rng.integers(0, TOPICS, PAIRS)

    ours, result = best_of(all_figures, a, b, topics)
    sklearn_time, sklearn_kappa = best_of(cohen_kappa_score, a, b)
    assert abs(result["cohen_kappa"] - sklearn_kappa) < 1e-12, (result["cohen_kappa"], sklearn_kappa)

    print(
        f"label-level agreement, {PAIRS:,} pairs, {LABELS} labels, {TOPICS} topics, {RESAMPLES:,} bootstrap resamples"
    )
    print(
        f"  all figures (ours):              {ours:.3f} s  (target < 3 s: {'met' if ours < 3 else 'MISSED'})"
    )
    print(f"  sklearn cohen_kappa_score alone: {sklearn_time:.3f} s")
    print(f"  ratio ours / sklearn kappa:      {ours / sklearn_time:.2f}x")
    print(
        f"  kappa {result['cohen_kappa']:.4f} (sklearn {sklearn_kappa:.4f}), quadratic {result['weighted_kappa_quadratic']:.4f}, "
        f"alpha {result['krippendorff_alpha']:.4f}, 95% CI {result['kappa_ci95'][0]:.4f}-{result['kappa_ci95'][1]:.4f}"
    )


if __name__ == "__main__":
    main()
