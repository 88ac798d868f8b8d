"""How far two judges agree: label level (kappa, alpha, confusion) and system level (rank correlation).

Pure computation on numpy arrays, no ORM: `judging.agreement.selectors` turns the database into `Pairs`,
and commands, pages and reports call `label_agreement` and `rank_agreement` on them.

Every label-level figure is computed from confusion matrices (rows judge A, columns judge B) built with
one `np.bincount`, so a million pairs cost a few milliseconds, and the bootstrap over topics resamples
per-topic confusion matrices instead of label pairs. The figures equal scikit-learn's
`cohen_kappa_score` and the krippendorff package's `alpha` on the same pairs (tests check this).
An undefined figure (one label only, no shared units) is `None` with a sentence in `notes`, never NaN.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from core.ordering import natural_key
from core.wording import plural
from judging.measures.ranking import tau_over_turns

# A label on a judge's scale: a grade, or a class name (support's labels).
Label: TypeAlias = int | float | str
AlphaLevel = Literal["nominal", "ordinal"]
WeightKind = Literal["none", "linear", "quadratic"]

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


class AgreementUndefined(ValueError):
    """There is nothing to compare (no unit both judges labelled); the message says why."""


@dataclass(frozen=True)
class Pairs:
    """Labels two judges gave the same units: `a[i]` and `b[i]` are codes into `labels`, for unit i in
    topic `topics[topic[i]]`."""

    a: np.ndarray
    b: np.ndarray
    topic: np.ndarray
    labels: tuple[Label, ...]
    topics: tuple[str, ...]

    @property
    def n(self) -> int:
        return int(self.a.shape[0])


def _codes(values: Sequence[Label] | np.ndarray, labels: Sequence[Label]) -> np.ndarray:
    """Map label values to their positions in `labels`; a value outside the scale is an error."""
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    uniques, inverse = np.unique(array, return_inverse=True)
    position = {label: i for i, label in enumerate(labels)}
    try:
        mapped = np.array([position[u.item() if hasattr(u, "item") else u] for u in uniques], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"label {exc.args[0]!r} is not one of {list(labels)}") from None
    return mapped[inverse.reshape(-1)]


def encode_pairs(
    *,
    a: Sequence[Label] | np.ndarray,
    b: Sequence[Label] | np.ndarray,
    topics: Sequence[Label] | np.ndarray,
    labels: Sequence[Label],
) -> Pairs:
    """Pairs from label values and the topic of each unit (any hashable topic names)."""
    if not (len(a) == len(b) == len(topics)):
        raise ValueError(f"a, b and topics differ in length ({len(a)}, {len(b)}, {len(topics)})")
    topic_names, topic_codes = np.unique(np.asarray(topics), return_inverse=True)
    return Pairs(
        a=_codes(a, labels),
        b=_codes(b, labels),
        topic=topic_codes.reshape(-1).astype(np.int64),
        labels=tuple(labels),
        topics=tuple(str(t) for t in topic_names.tolist()),
    )


def binarise(pairs: Pairs, threshold: float) -> Pairs:
    """The same pairs on a 0/1 scale: a label counts as 1 when its value is at least `threshold`."""
    try:
        is_high = np.array([float(label) >= threshold for label in pairs.labels], dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(f"labels {list(pairs.labels)} are not numeric; cannot binarise") from None
    return Pairs(
        a=is_high[pairs.a], b=is_high[pairs.b], topic=pairs.topic, labels=(0, 1), topics=pairs.topics
    )


# --- Figures from confusion matrices ---------------------------------------------------------------


def confusion_matrix(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Counts of (label of A, label of B), rows A and columns B, in the order of the codes."""
    return np.bincount(a * k + b, minlength=k * k).reshape(k, k)


def topic_confusion_matrices(pairs: Pairs) -> np.ndarray:
    """One confusion matrix per topic, shape (topics, k, k)."""
    k, t = len(pairs.labels), len(pairs.topics)
    return np.bincount(pairs.topic * (k * k) + pairs.a * k + pairs.b, minlength=t * k * k).reshape(t, k, k)


def disagreement_weights(k: int, kind: WeightKind) -> np.ndarray:
    """scikit-learn's weight matrices: 1 off the diagonal, |i-j|, or (i-j)^2 over label positions."""
    index = np.arange(k)
    distance: np.ndarray = np.abs(index[:, None] - index[None, :]).astype(np.float64)
    if kind == "none":
        return np.asarray((distance > 0).astype(np.float64))
    if kind == "linear":
        return distance
    return np.asarray(distance**2)


def kappa_from_confusion(confusion: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's kappa (weighted by `weights`) of one confusion matrix or a stack of them (..., k, k).

    The same formula as scikit-learn: 1 - sum(w * observed) / sum(w * expected), with expected from
    the margins. NaN where it is undefined (no pairs, or chance agreement is already perfect).
    """
    confusion = confusion.astype(np.float64)
    n = confusion.sum(axis=(-2, -1))
    rows = confusion.sum(axis=-1)
    cols = confusion.sum(axis=-2)
    observed = (weights * confusion).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.einsum("...i,...j,ij->...", rows, cols, weights) / n
        return np.asarray(1.0 - observed / expected)


def cohen_kappa(
    a: Sequence[Label] | np.ndarray,
    b: Sequence[Label] | np.ndarray,
    *,
    labels: Sequence[Label],
    weights: WeightKind = "none",
) -> float | None:
    """Cohen's kappa of two judges' labels of the same units (`a[i]`, `b[i]` for unit i), on the scale
    `labels`; None where it is undefined (no units, or chance agreement already perfect)."""
    if len(a) != len(b):
        raise ValueError(f"a and b differ in length ({len(a)}, {len(b)})")
    k = len(labels)
    confusion = confusion_matrix(_codes(a, labels), _codes(b, labels), k)
    return _finite(kappa_from_confusion(confusion, disagreement_weights(k, weights)))


def alpha_from_confusion(confusion: np.ndarray, level: AlphaLevel) -> float:
    """Krippendorff's alpha of two judges with no missing labels, from their confusion matrix.

    Each unit holds two values, so the coincidence matrix is C + C^T; the ordinal metric is
    Krippendorff's (sum of the marginals between the two values, minus half of the two ends, squared).
    """
    coincidence = (confusion + confusion.T).astype(np.float64)
    return _alpha_from_coincidence(coincidence, level)


def _alpha_from_coincidence(coincidence: np.ndarray, level: AlphaLevel) -> float:
    n_v = coincidence.sum(axis=0)
    total = n_v.sum()
    if total <= 1:
        return math.nan
    k = n_v.shape[0]
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(n_v)])
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[high + 1] - cumulative[low]
        delta = (between - (n_v[:, None] + n_v[None, :]) / 2.0) ** 2
    else:
        delta = 1.0 - np.eye(k)
    expected = (np.outer(n_v, n_v) - np.diag(n_v)) / (total - 1)
    disagreement_expected = (expected * delta).sum()
    if disagreement_expected == 0:
        return math.nan
    return float(1.0 - (coincidence * delta).sum() / disagreement_expected)


def krippendorff_alpha_multi(reliability: np.ndarray, level: AlphaLevel) -> float | None:
    """Krippendorff's alpha of any number of judges (rows) over units (columns), NaN for a missing label.

    Delegates to the krippendorff package; None when it is undefined (fewer than two pairable values,
    or a single value in the data).
    """
    import krippendorff

    reliability = np.asarray(reliability, dtype=np.float64)
    present = ~np.isnan(reliability)
    pairable = present.sum(axis=0) >= 2
    values = reliability[:, pairable][present[:, pairable]]
    if values.size < 2 or np.unique(values).size < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
    return None if not np.isfinite(value) else float(value)


def _finite(value: float | np.floating | np.ndarray) -> float | None:
    return float(value) if np.isfinite(value) else None


def _figures(
    confusion: np.ndarray, *, ordinal: bool, alpha_level: AlphaLevel, notes: list[str]
) -> dict[str, Any]:
    """The point figures of one confusion matrix, with a note for each undefined one."""
    k = confusion.shape[0]
    n = int(confusion.sum())
    kappa = _finite(kappa_from_confusion(confusion, disagreement_weights(k, "none")))
    figures: dict[str, Any] = {
        "n": n,
        "exact_agreement": float(np.trace(confusion) / n) if n else None,
        "cohen_kappa": kappa,
        "weighted_kappa_linear": None,
        "weighted_kappa_quadratic": None,
        "krippendorff_alpha": _finite(alpha_from_confusion(confusion, alpha_level)),
    }
    if ordinal:
        figures["weighted_kappa_linear"] = _finite(
            kappa_from_confusion(confusion, disagreement_weights(k, "linear"))
        )
        figures["weighted_kappa_quadratic"] = _finite(
            kappa_from_confusion(confusion, disagreement_weights(k, "quadratic"))
        )
    if kappa is None:
        used = int(((confusion.sum(axis=0) + confusion.sum(axis=1)) > 0).sum())
        notes.append(
            "Cohen's kappa is undefined: both judges gave every unit the same label, so chance agreement is perfect."
            if used <= 1
            else "Cohen's kappa is undefined: each judge used a single label."
        )
    if figures["krippendorff_alpha"] is None:
        notes.append("Krippendorff's alpha is undefined: only one label value occurs in the data.")
    return figures


def bootstrap_kappa_ci(
    per_topic: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of Cohen's kappa from resampling topics with replacement.

    Topics, not label pairs, are the resampled unit because labels within a topic are not independent
    (the same assessor, the same information need). Each resample's confusion matrix is a weighted sum
    of the per-topic matrices, so the whole bootstrap is one (resamples x topics) @ (topics x k^2)
    product. Resamples where kappa is undefined are left out; None when all are.
    """
    topics, k, _ = per_topic.shape
    if topics == 0:
        return None
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, topics, size=(resamples, topics))
    offsets = (np.arange(resamples) * topics)[:, None]
    weights = np.bincount((drawn + offsets).ravel(), minlength=resamples * topics).reshape(resamples, topics)
    stacked = (weights @ per_topic.reshape(topics, k * k)).reshape(resamples, k, k)
    kappas = kappa_from_confusion(stacked, disagreement_weights(k, "none"))
    kappas = kappas[np.isfinite(kappas)]
    if kappas.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(kappas, [tail, 100.0 - tail])
    return float(low), float(high)


def _per_topic(pairs: Pairs, per_topic: np.ndarray, *, ordinal: bool) -> list[dict[str, Any]]:
    k = len(pairs.labels)
    n = per_topic.sum(axis=(1, 2))
    agree = np.trace(per_topic, axis1=1, axis2=2)
    kappas = kappa_from_confusion(per_topic, disagreement_weights(k, "none"))
    quadratic = kappa_from_confusion(per_topic, disagreement_weights(k, "quadratic")) if ordinal else None
    rows = []
    for i, topic in enumerate(pairs.topics):
        if n[i] == 0:
            continue
        row: dict[str, Any] = {
            "topic": topic,
            "n": int(n[i]),
            "exact_agreement": float(agree[i] / n[i]),
            "cohen_kappa": _finite(kappas[i]),
        }
        if quadratic is not None:
            row["weighted_kappa_quadratic"] = _finite(quadratic[i])
        rows.append(row)
    rows.sort(key=lambda row: natural_key(row["topic"]))
    return rows


def label_agreement(
    pairs: Pairs,
    *,
    ordinal: bool,
    alpha_level: AlphaLevel,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Every label-level figure of two judges on the units both labelled.

    Raises AgreementUndefined when there are no such units. Weighted kappas are computed only for
    ordinal scales (label order is the scale order); `confusion_matrix` rows are judge A, columns judge
    B, both in the order of `labels`.
    """
    if pairs.n == 0:
        raise AgreementUndefined("the two judges share no labelled units, so there is nothing to compare")
    k = len(pairs.labels)
    notes: list[str] = []
    confusion = confusion_matrix(pairs.a, pairs.b, k)
    per_topic = topic_confusion_matrices(pairs)
    result: dict[str, Any] = {"labels": list(pairs.labels)}
    result.update(_figures(confusion, ordinal=ordinal, alpha_level=alpha_level, notes=notes))
    active_topics = int((per_topic.sum(axis=(1, 2)) > 0).sum())
    # Resampling one topic gives that topic back every time: a zero-width interval that would read as
    # certainty. The interval is undefined then, like any figure the data cannot give.
    ci = (
        bootstrap_kappa_ci(per_topic, resamples=resamples, seed=seed)
        if result["cohen_kappa"] is not None and active_topics >= 2
        else None
    )
    if result["cohen_kappa"] is not None and active_topics < 2:
        notes.append("Only one topic: no bootstrap interval over topics (it needs two or more).")
    row_totals = confusion.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(row_totals > 0, confusion / np.maximum(row_totals, 1), 0.0)
    result.update(
        {
            "kappa_ci95": list(ci) if ci is not None else None,
            "bootstrap": {"unit": "topic", "resamples": resamples, "seed": seed, "topics": active_topics},
            "alpha_level": alpha_level,
            "confusion_matrix": confusion.tolist(),
            "confusion_row_shares": shares.tolist(),
            "label_counts": {"a": confusion.sum(axis=1).tolist(), "b": confusion.sum(axis=0).tolist()},
            "per_topic": _per_topic(pairs, per_topic, ordinal=ordinal),
            "notes": notes,
        }
    )
    return result


# --- System level ----------------------------------------------------------------------------------


MIN_RANKED_RUNS = 3


def rank_agreement(
    *,
    scores_a: Mapping[str, float],
    scores_b: Mapping[str, float],
    left_out: Mapping[str, str] | None = None,
    per_turn_a: Mapping[str, Mapping[str, float]] | None = None,
    per_turn_b: Mapping[str, Mapping[str, float]] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Kendall's tau-b and Spearman's rho between the run scores under two judges.

    Given each run's per-turn scores under both judges (where a run's score is their mean), tau-b also
    gets a 95% percentile interval from a bootstrap over turns (`kendall_tau_ci`): how far the agreement
    could move with other turns of the same kind. Without them it is None.

    Runs scored under only one judge are listed, not compared. `left_out` names runs the measure cannot
    rank at all (a run that ranks no passage scores 0 under every judge) with the reason, e.g. "without a
    ranking": they are left out of the comparison and counted in a note, since a block of runs tied at 0
    under both judges would lift tau towards 1 while saying nothing about the order of the others.
    Rank 1 is the best (highest) score; ties share the best rank. A correlation that is undefined (fewer
    than three runs, or every run scoring the same under one judge) is None with a note.
    """
    # scipy.stats takes about half a second to import; only rank comparisons need it.
    from scipy import stats

    dropped = dict(left_out or {})
    runs = sorted((set(scores_a) & set(scores_b)) - set(dropped))
    x = np.array([scores_a[r] for r in runs], dtype=np.float64)
    y = np.array([scores_b[r] for r in runs], dtype=np.float64)
    notes: list[str] = []
    by_reason: dict[str, int] = {}
    for reason in dropped.values():
        by_reason[reason] = by_reason.get(reason, 0) + 1
    for reason, count in sorted(by_reason.items()):
        notes.append(f"{plural(count, 'run')} {reason} left out.")
    tau = tau_p = rho = rho_p = None
    if len(runs) < MIN_RANKED_RUNS:
        # Two runs give tau = +1 or -1 whatever the judges: a number that reads as agreement but is a coin.
        notes.append(
            f"Kendall's tau and Spearman's rho cannot be computed: {plural(len(runs), 'run')} "
            f"scored under both judges, and a rank correlation needs at least {MIN_RANKED_RUNS}."
        )
    elif np.unique(x).size < 2 or np.unique(y).size < 2:
        notes.append("Every run has the same score under one judge: rank correlation is undefined.")
    else:
        tau_result = stats.kendalltau(x, y, variant="b")
        rho_result = stats.spearmanr(x, y)
        tau, tau_p = _finite(tau_result.statistic), _finite(tau_result.pvalue)
        rho, rho_p = _finite(rho_result.statistic), _finite(rho_result.pvalue)
    tau_ci = None
    if tau is not None and per_turn_a is not None and per_turn_b is not None:
        tau_ci = tau_over_turns(runs=runs, x=x, y=y, per_turn_a=per_turn_a, per_turn_b=per_turn_b, seed=seed)
        if tau_ci is None:
            notes.append("No interval for Kendall's tau: the measure has no per-turn scores for every run.")
    rank_a = stats.rankdata(-x, method="min") if runs else np.zeros(0)
    rank_b = stats.rankdata(-y, method="min") if runs else np.zeros(0)
    rows = [
        {
            "run": run,
            "score_a": float(x[i]),
            "score_b": float(y[i]),
            "rank_a": int(rank_a[i]),
            "rank_b": int(rank_b[i]),
        }
        for i, run in enumerate(runs)
    ]
    rows.sort(key=lambda row: (row["rank_a"], row["run"]))
    return {
        "n_runs": len(runs),
        "kendall_tau_b": tau,
        "kendall_p": tau_p,
        "kendall_tau_ci": tau_ci,
        "spearman_rho": rho,
        "spearman_p": rho_p,
        "runs": rows,
        "only_a": sorted(set(scores_a) - set(scores_b) - set(dropped)),
        "only_b": sorted(set(scores_b) - set(scores_a) - set(dropped)),
        "left_out": [{"run": run, "reason": dropped[run]} for run in sorted(dropped)],
        "notes": notes,
    }
