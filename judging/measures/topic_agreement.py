"""How far two evaluations of the same runs agree topic by topic: on each topic, Kendall's tau-b and
Pearson's r between the runs' scores under one evaluation and under the other, and how those figures
spread over the topics.

A run-level tau near 1 can hide topics on which the two evaluations order the runs quite differently;
TREC RAG's calibration of automatic against manual nugget evaluation reports the per-topic agreement and
its spread beside the run-level tau for that reason. Pure computation on numbers (scipy's `kendalltau`
and `pearsonr`, numpy's quantiles), no query: the selectors feed it.

An undefined figure (fewer than three runs on a topic, or every run scoring the same there under one
evaluation) is None with a reason, never NaN, and is left out of the spread.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from core.ordering import natural_key
from core.wording import plural

# As for the run-level tau: with two runs a rank correlation is +1 or -1 whatever the evaluations.
MIN_TOPIC_RUNS = 3

TIES = "every run scores the same here under one evaluation"


@dataclass(frozen=True)
class TopicFigures:
    topic: str
    runs: int
    kendall_tau_b: float | None
    pearson_r: float | None
    # Why the figures are None, else "".
    reason: str = ""


@dataclass(frozen=True)
class Spread:
    """How one figure spreads over the topics where it is defined (quartiles by linear interpolation,
    the sample standard deviation; None with fewer than two topics)."""

    topics: int
    mean: float
    sd: float | None
    minimum: float
    q1: float
    median: float
    q3: float
    maximum: float


def spread(values: Sequence[float]) -> Spread | None:
    """The spread of `values`; None when there are none."""
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    q1, median, q3 = np.quantile(array, [0.25, 0.5, 0.75])
    return Spread(
        topics=int(array.size),
        mean=float(array.mean()),
        sd=float(array.std(ddof=1)) if array.size > 1 else None,
        minimum=float(array.min()),
        q1=float(q1),
        median=float(median),
        q3=float(q3),
        maximum=float(array.max()),
    )


def topic_figures(topic: str, x: np.ndarray, y: np.ndarray) -> TopicFigures:
    """Tau-b and r between the run scores `x` and `y` of one topic (the same runs, in the same order)."""
    from scipy import stats

    runs = int(x.size)
    if runs < MIN_TOPIC_RUNS:
        return TopicFigures(topic, runs, None, None, f"{plural(runs, 'run')} under both")
    if np.unique(x).size < 2 or np.unique(y).size < 2:
        return TopicFigures(topic, runs, None, None, TIES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tau = float(stats.kendalltau(x, y, variant="b").statistic)
        r = float(stats.pearsonr(x, y).statistic)
    return TopicFigures(topic, runs, tau if math.isfinite(tau) else None, r if math.isfinite(r) else None, "")


def topic_agreement(
    *,
    per_topic_a: Mapping[str, Mapping[str, float]],
    per_topic_b: Mapping[str, Mapping[str, float]],
) -> dict[str, Any]:
    """Per-topic tau-b and r of two evaluations, and their spread over topics.

    `per_topic_a`, `per_topic_b`: {run: {topic: score}} under each evaluation (the shape `rank_agreement`
    takes). A topic compares the runs scored on it under both; a topic only one evaluation scored is
    listed in `only_a` / `only_b`, not compared.
    """
    topics_a = {topic for scores in per_topic_a.values() for topic in scores}
    topics_b = {topic for scores in per_topic_b.values() for topic in scores}
    rows = []
    for topic in sorted(topics_a & topics_b, key=natural_key):
        runs = sorted(
            run
            for run in per_topic_a.keys() & per_topic_b.keys()
            if topic in per_topic_a[run] and topic in per_topic_b[run]
        )
        x = np.array([per_topic_a[run][topic] for run in runs], dtype=np.float64)
        y = np.array([per_topic_b[run][topic] for run in runs], dtype=np.float64)
        rows.append(topic_figures(topic, x, y))
    taus = [row.kendall_tau_b for row in rows if row.kendall_tau_b is not None]
    rs = [row.pearson_r for row in rows if row.pearson_r is not None]
    undefined = len(rows) - len(taus)
    notes = []
    if undefined:
        notes.append(
            f"{undefined} of {plural(len(rows), 'topic')} "
            f"{'has' if undefined == 1 else 'have'} no per-topic figure (fewer than {MIN_TOPIC_RUNS} runs "
            "under both evaluations, or every run tied under one): left out of the spread."
        )
    tau_spread, r_spread = spread(taus), spread(rs)
    return {
        "topics": [asdict(row) for row in rows],
        "kendall_tau_b": asdict(tau_spread) if tau_spread else None,
        "pearson_r": asdict(r_spread) if r_spread else None,
        "only_a": sorted(topics_a - topics_b, key=natural_key),
        "only_b": sorted(topics_b - topics_a, key=natural_key),
        "notes": notes,
    }
