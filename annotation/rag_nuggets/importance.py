"""Whose vital/okay label of a nugget counts: one rule for the scores and for both nuggetizer exports, so
that nuggetizer's calculate_metrics on an export gives the scores Assay shows.

In nuggetizer the importance travels inside the assignments file, next to each label. Assay keeps the
labels apart (a nugget list, its vital/okay from one or more judges, its assignments from others), so the
default takes the importance that came with the assignments: the assignment judge's own label of the
nugget (an imported assignments file's), else the label of the judge whose nugget it is (a created-nuggets
file's). A named importance judge replaces the rule with that judge's labels alone.
"""

from __future__ import annotations

from django.db.models import F, Q, QuerySet

from annotation.models import Collection, Judge, NuggetImportance, NuggetImportanceJudgment

IMPORTANCE_DEFAULT = (
    "the assignment judge's own vital/okay label of a nugget, else that of the judge whose nugget it is"
)


def importance_labels(
    *,
    collection: Collection,
    judge: Judge | None,
    importance_judge: Judge | None = None,
    nuggets_judge: Judge | None = None,
) -> dict[int, str]:
    """{nugget id: vital, okay or failed} under the rule above, in one query. A "failed" label (nuggetizer's:
    its LLM gave no readable importance), like a missing one, counts as okay, as nuggetizer counts only
    "vital" as vital.

    `judge` is the assignment judge (None when exporting a nugget list: then each nugget's own judge);
    `nuggets_judge` keeps only the nuggets of that judge's lists.
    """
    rows = NuggetImportanceJudgment.objects.filter(nugget__turn__collection=collection)
    if nuggets_judge is not None:
        rows = rows.filter(nugget__judge=nuggets_judge)
    if importance_judge is not None:
        return dict(rows.filter(judge=importance_judge).values_list("nugget_id", "importance"))
    own = Q(judge=F("nugget__judge"))
    if judge is not None:
        own |= Q(judge=judge)
    labels: dict[int, str] = {}
    for nugget_id, judge_id, importance in rows.filter(own).values_list(
        "nugget_id", "judge_id", "importance"
    ):
        if judge is not None and judge_id == judge.pk:
            labels[nugget_id] = importance
        else:
            labels.setdefault(nugget_id, importance)
    return labels


def vital_nuggets(
    *,
    collection: Collection,
    judge: Judge,
    importance_judge: Judge | None = None,
    nuggets_judge: Judge | None = None,
) -> QuerySet:
    """The ids of the nuggets `importance_labels` says are vital, as a subquery (`nugget_id__in=`), so that
    the database decides it for every label it sums without the ids travelling with the query."""
    rows = NuggetImportanceJudgment.objects.filter(
        nugget__turn__collection=collection, importance=NuggetImportance.VITAL
    )
    if nuggets_judge is not None:
        rows = rows.filter(nugget__judge=nuggets_judge)
    if importance_judge is not None:
        rows = rows.filter(judge=importance_judge)
    else:
        own = NuggetImportanceJudgment.objects.filter(judge=judge, nugget__turn__collection=collection)
        rows = rows.filter(
            Q(judge=judge) | (Q(judge=F("nugget__judge")) & ~Q(nugget_id__in=own.values("nugget_id")))
        )
    return rows.values("nugget_id")


def importance_judge_name(importance_judge: Judge | None) -> str:
    """How a file name or a page heading says which importance counted."""
    return importance_judge.name if importance_judge is not None else "default"
