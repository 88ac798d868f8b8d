"""The whole-campaign report and the live view of assessors."""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np
from django.utils import timezone

from annotation.judge_menus import judges_with_labels, label_conditions
from annotation.models import Collection, Condition, Judge
from judging.agreement.label_table import LabelTable
from judging.agreement.reports.comparison import task_label_agreement
from judging.agreement.run_scores import RUN_MEASURES, RunScores, run_scores_by_judge
from judging.agreement.selectors import (
    TASKS,
    labels_by_judge,
    pairs_from_labels,
    task_spec,
)
from judging.measures.agreement import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Pairs,
    binarise,
    confusion_matrix,
    disagreement_weights,
    kappa_from_confusion,
    label_agreement,
    rank_agreement,
)

# --- Campaign report -------------------------------------------------------------------------------

HUMAN_KINDS = {Judge.Kind.ASSESSOR, Judge.Kind.CROWD, Judge.Kind.IMPORTED}


def _pair_order(judges: list[Judge]) -> list[tuple[Judge, Judge]]:
    """Every pair once, people (and imported human files) as A and machines as B where they differ."""
    pairs = []
    for first, second in combinations(judges, 2):
        if first.kind not in HUMAN_KINDS and second.kind in HUMAN_KINDS:
            first, second = second, first
        pairs.append((first, second))
    return pairs


def _judges(*, collection: Collection, task: str, condition: str | None) -> list[Judge]:
    judges = list(
        judges_with_labels(collection=collection, task=task, conditions=[condition] if condition else None)
    )
    if condition:
        # The machine side of a per-condition comparison labels in its own condition.
        judges += [
            j
            for j in judges_with_labels(collection=collection, task=task)
            if j.kind not in HUMAN_KINDS and j not in judges
        ]
    return judges


def _section(
    *,
    title: str,
    task: str,
    judges: list[Judge],
    table: LabelTable,
    scores: dict[int, RunScores] | None = None,
    condition: str | None = None,
    binary_threshold: float | None = None,
    measure: str | None = None,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """One table of the report: every pair of `judges` on the task that shares units, most shared units
    first, from labels and run scores read once for the whole section (and shared by the graded and binary
    relevance sections)."""
    rows = []
    for judge_a, judge_b in _pair_order(judges):
        pairs = table.pairs(judge_a.id, judge_b.id)
        if pairs.n == 0:
            continue
        if binary_threshold is not None:
            pairs = binarise(pairs, binary_threshold)
            figures = label_agreement(
                pairs, ordinal=False, alpha_level="nominal", resamples=resamples, seed=seed
            )
        else:
            figures = task_label_agreement(pairs, task, resamples=resamples, seed=seed)
        row = {"judges": [judge_a.name, judge_b.name], "judge_ids": [judge_a.id, judge_b.id], **figures}
        if measure and scores is not None:
            a, b = scores[judge_a.id], scores[judge_b.id]
            ranking = rank_agreement(
                scores_a=a.scores, scores_b=b.scores, left_out={**a.left_out, **b.left_out}
            )
            row["rank"] = {k: ranking[k] for k in ("n_runs", "kendall_tau_b", "spearman_rho", "notes")}
            row["rank"]["left_out"] = len(ranking["left_out"])
        rows.append(row)
    # Most shared units first: the figures resting on the most labels (the machines against each other
    # and against each person) lead, and the page shows the section a page of pairs at a time.
    rows.sort(key=lambda row: (-row["n"], row["judges"]))
    spec = TASKS[task]
    return {
        "title": title,
        "task": task,
        "condition": condition,
        "binary_threshold": binary_threshold,
        "measure": measure,
        "ordinal": spec.ordinal and binary_threshold is None,
        "rows": rows,
    }


def _sections(
    *,
    collection: Collection,
    task: str,
    titles: dict[float | None, str],
    condition: str | None = None,
    measure: str | None = None,
    resamples: int,
    seed: int,
) -> list[dict[str, Any]]:
    """The sections of one task, one per binary threshold in `titles` (None: the task's own scale), all
    from one read of the judges' labels; the run scores go with the section on the task's own scale."""
    judges = _judges(collection=collection, task=task, condition=condition)
    labels = (
        labels_by_judge(collection=collection, task=task, judges=judges, condition=condition)
        if judges
        else {}
    )
    table = LabelTable.of(task, labels)
    scores = (
        run_scores_by_judge(
            collection=collection,
            measure=measure,
            judges=judges,
            labels=labels if RUN_MEASURES[measure][0] == task else None,
        )
        if measure and judges
        else {}
    )
    return [
        _section(
            title=title,
            task=task,
            judges=judges,
            table=table,
            scores=scores if threshold is None else None,
            condition=condition,
            binary_threshold=threshold,
            measure=measure if threshold is None else None,
            resamples=resamples,
            seed=seed,
        )
        for threshold, title in titles.items()
    ]


def campaign_report(
    *,
    collection: Collection,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Agreement of every pair of judges on every task of a collection, in the layout of the papers:
    relevance (graded and binary at grade 2, with nDCG@5 rank correlation), PTKB, nuggets (NtN), crowd
    NtR, and support per human condition (with weighted-precision rank correlation). `progress(done,
    total, "tasks")` is told after each task's sections."""
    human_conditions = [c for c in Condition if c not in {Condition.MACHINE, Condition.IMPORTED}]
    present = label_conditions(collection=collection, task="support")
    # Each task's sections: (task, titles, condition, measure).
    parts: list[tuple[str, dict[float | None, str], str | None, str | None]] = [
        (
            "relevance",
            {None: "Passage relevance (0-4)", 2: "Passage relevance, binary (grade >= 2)"},
            None,
            "ndcg@5",
        ),
        ("ptkb", {None: "PTKB statement relevance"}, None, None),
        ("ntn", {None: "Nugget matching (NtN)"}, None, None),
        ("ntr", {None: "Crowd nugget-to-response (NtR)"}, None, None),
    ]
    for condition in human_conditions:
        if condition.value in present:
            parts.append(
                (
                    "support",
                    {None: f"Support: {condition.label}"},
                    condition.value,
                    "support-weighted-precision",
                )
            )
    if not any(c.value in present for c in human_conditions):
        parts.append(("support", {None: "Support"}, None, "support-weighted-precision"))
    sections: list[dict[str, Any]] = []
    for done, (task, titles, part_condition, measure) in enumerate(parts, start=1):
        sections += _sections(
            collection=collection,
            task=task,
            titles=titles,
            condition=part_condition,
            measure=measure,
            resamples=resamples,
            seed=seed,
        )
        if progress is not None:
            progress(done, len(parts), "tasks")
    return {"collection": collection.name, "generated_at": timezone.now().isoformat(), "sections": sections}


# --- Live view -------------------------------------------------------------------------------------


def _quick(pairs_list: list[Pairs], k: int) -> dict[str, Any]:
    """n, exact agreement and kappa of pooled pairs (no bootstrap: the live view is polled)."""
    confusion = sum((confusion_matrix(p.a, p.b, k) for p in pairs_list), np.zeros((k, k), dtype=np.int64))
    n = int(confusion.sum())
    kappa = kappa_from_confusion(confusion, disagreement_weights(k, "none")) if n else np.nan
    return {
        "n": n,
        "exact_agreement": float(np.trace(confusion) / n) if n else None,
        "cohen_kappa": float(kappa) if np.isfinite(kappa) else None,
    }


def live_agreement(*, collection: Collection, task: str = "relevance") -> dict[str, Any]:
    """For each assessor so far, most labels first: labels given, agreement with each LLM judge, and with
    the other assessors pooled over the units they share."""
    spec = task_spec(task)
    judges = list(judges_with_labels(collection=collection, task=task))
    assessors = [j for j in judges if j.kind == Judge.Kind.ASSESSOR]
    machines = [j for j in judges if j.kind == Judge.Kind.LLM]
    by_judge = labels_by_judge(collection=collection, task=task, judges=judges) if judges else {}
    k = len(spec.labels)
    rows: list[dict[str, Any]] = []
    for assessor in assessors:
        mine = by_judge[assessor.id]
        others = [pairs_from_labels(task, mine, by_judge[o.id]) for o in assessors if o.id != assessor.id]
        rows.append(
            {
                "judge": assessor.name,
                "judge_id": assessor.id,
                "labels": len(mine),
                "llm": [
                    {
                        "judge": m.name,
                        "judge_id": m.id,
                        **_quick([pairs_from_labels(task, mine, by_judge[m.id])], k),
                    }
                    for m in machines
                ],
                "assessors": _quick(others, k),
            }
        )
    # Most labels first: the assessors whose figures rest on the most work lead the page's first page.
    rows.sort(key=lambda row: (-row["labels"], row["judge"]))
    return {
        "collection": collection.name,
        "task": task,
        "llm_judges": [m.name for m in machines],
        "assessors": rows,
        "updated_at": timezone.now().isoformat(),
    }
