"""One comparison of two judges and a run ranking under two judges, as dicts (the JSON shape)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from annotation.models import Collection, Judge
from judging.agreement.run_scores import RUN_MEASURES, run_scores
from judging.agreement.selectors import labels_by_judge, pairs_from_labels, task_spec
from judging.measures.agreement import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    AgreementUndefined,
    Pairs,
    binarise,
    label_agreement,
    rank_agreement,
)

ImageFormat = Literal["svg", "png"]
FIGURE_COLUMNS = [
    "n",
    "exact_agreement",
    "cohen_kappa",
    "weighted_kappa_linear",
    "weighted_kappa_quadratic",
    "krippendorff_alpha",
]


def task_label_agreement(pairs: Pairs, task: str, *, resamples: int, seed: int) -> dict[str, Any]:
    """`label_agreement` at the task's scale (ordinal or not, alpha's level)."""
    spec = task_spec(task)
    return label_agreement(
        pairs, ordinal=spec.ordinal, alpha_level=spec.alpha_level, resamples=resamples, seed=seed
    )


def comparison_report(
    *,
    collection: Collection,
    task: str,
    judge_a: Judge,
    judge_b: Judge,
    topics: Sequence[str] | None = None,
    condition: str | None = None,
    binary_threshold: float | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Every label-level figure of judge A against judge B on a task (the `agreement --format json` shape).

    Raises ValueError for a bad task, condition or threshold, AgreementUndefined when the judges share
    no unit.
    """
    spec = task_spec(task)
    if binary_threshold is not None and not spec.binarisable:
        raise ValueError(f"a binary threshold applies to relevance only, not to {task}")
    by_judge = labels_by_judge(
        collection=collection, task=task, judges=[judge_a, judge_b], topics=topics, condition=condition
    )
    pairs = pairs_from_labels(task, by_judge[judge_a.id], by_judge[judge_b.id])
    if pairs.n == 0:
        raise AgreementUndefined(
            f"judges {judge_a.name} and {judge_b.name} share no labelled {task} units in collection "
            f"{collection.name}" + (f" (topics {', '.join(topics)})" if topics else "")
        )
    figures = task_label_agreement(pairs, task, resamples=resamples, seed=seed)
    report: dict[str, Any] = {
        "collection": collection.name,
        "task": task,
        "unit": spec.unit,
        "judges": [judge_a.name, judge_b.name],
        "judge_ids": [judge_a.id, judge_b.id],
        "condition": condition,
        "topics": list(topics) if topics else None,
        "labelled_by_a": len(by_judge[judge_a.id]),
        "labelled_by_b": len(by_judge[judge_b.id]),
        "n": figures.pop("n"),
        "labels": figures.pop("labels"),
        "label_names": list(spec.label_names),
    }
    report.update(figures)
    if binary_threshold is not None:
        try:
            binary = label_agreement(
                binarise(pairs, binary_threshold),
                ordinal=False,
                alpha_level="nominal",
                resamples=resamples,
                seed=seed,
            )
        except AgreementUndefined:
            binary = None
        report["binary"] = {"threshold": binary_threshold, **binary} if binary else None
    return report


def rank_report(
    *,
    collection: Collection,
    measure: str,
    judge_a: Judge,
    judge_b: Judge,
    importance_judge: Judge | None = None,
) -> dict[str, Any]:
    """Runs scored by `measure` under judge A and judge B, with Kendall's tau-b (and its interval over
    turns where the measure has per-turn scores) and Spearman's rho; runs the measure cannot rank under
    either judge are left out and listed. `importance_judge`: whose vital/okay counts for both judges'
    TREC RAG nugget scores (default: the importance that came with each judge's assignments)."""
    scores_a = run_scores(
        collection=collection, measure=measure, judge=judge_a, importance_judge=importance_judge
    )
    scores_b = run_scores(
        collection=collection, measure=measure, judge=judge_b, importance_judge=importance_judge
    )
    return {
        "collection": collection.name,
        "measure": measure,
        "importance_judge": importance_judge.name if importance_judge is not None else None,
        "judges": [judge_a.name, judge_b.name],
        "judge_ids": [judge_a.id, judge_b.id],
        **rank_agreement(
            scores_a=scores_a.scores,
            scores_b=scores_b.scores,
            left_out={**scores_a.left_out, **scores_b.left_out},
            per_turn_a=scores_a.per_turn,
            per_turn_b=scores_b.per_turn,
        ),
    }


def measures_for_task(task: str) -> list[str]:
    return [name for name, (measure_task, _f) in RUN_MEASURES.items() if measure_task == task]


def confusion_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The confusion matrix shaped for templates: one row per label of A, cells with count and row share."""
    return [
        {
            "label": label,
            "cells": [{"count": c, "share": s} for c, s in zip(counts, shares, strict=True)],
            "total": sum(counts),
        }
        for label, counts, shares in zip(
            report["labels"], report["confusion_matrix"], report["confusion_row_shares"], strict=True
        )
    ]
