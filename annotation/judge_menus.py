"""Reads for judge menus: the judges with labels of a task in a collection.

A menu that offered every judge listed judges of other collections and tasks (about 35 in a real
campaign), whose choice compares, estimates or shows nothing. Each menu here costs one query at any size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Exists, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.lookups import IsNull

from annotation.families import label_task
from annotation.models import Collection, Judge


def judges_with_labels(*, collection: Collection, task: str, **label_filters: Any) -> QuerySet[Judge]:
    """The judges with at least one label of `task` in the collection, by name: what a judge menu offers.

    A judge of another collection or task would give an empty comparison, estimate or list, so menus offer
    only these. One query at any size: an EXISTS per judge over the label table (`label_filters` narrow
    the labels, e.g. condition="blind"), never a query per judge nor a DISTINCT over a join.
    """
    return Judge.objects.filter(_has_labels(collection, task, **label_filters)).order_by("name")


def _has_labels(collection: Collection, task: str, **label_filters: Any) -> Exists:
    declared = label_task(task)
    return Exists(
        declared.model._default_manager.filter(
            judge=OuterRef("pk"), **{declared.collection: collection}, **label_filters
        )
    )


def has_label_in(labels: QuerySet[Model]) -> IsNull:
    """Whether the judge of the outer query (OuterRef("pk")) has one of `labels`: a condition to filter
    or annotate judges with.

    Its first label by the judge's index, not an EXISTS: PostgreSQL plans an EXISTS over a label table that
    few judges fill (the nugget assignments) as a scan of the table per judge, expecting a judge's first
    label early, so a judge with none here read every label. Ordered by judge, the subquery walks that
    judge's labels in the judge's index and stops at the first in the collection: one index probe for a
    judge with no labels, but all of a judge's labels in other collections for one with labels only there.
    So it is for such tables only; the menus of tables with a turn or collection index keep their EXISTS,
    which PostgreSQL answers from that index.
    """
    first = labels.filter(judge=OuterRef("pk")).order_by("judge").values("pk")[:1]
    return IsNull(Subquery(first), False)


def judge_names_by_task(*, collection: Collection, tasks: Sequence[str]) -> dict[str, list[str]]:
    """{task: names of the judges with labels of it in the collection, by name}, in one query.

    For a menu whose task is chosen in the same form: it offers each task's judges under the task's name.
    """
    flags = {f"has_{i}": _has_labels(collection, task) for i, task in enumerate(tasks)}
    either = Q()
    for flag in flags:
        either |= Q(**{flag: True})
    rows = Judge.objects.annotate(**flags).filter(either).order_by("name").values_list("name", *flags)
    return {task: [row[0] for row in rows if row[i + 1]] for i, task in enumerate(tasks)}


def judge_menu(
    names_by_task: dict[str, list[str]], *, first: str | None = None, empty: str | None = "---------"
) -> list[Any]:
    """Choices of a judge menu: the judges grouped under their task, the task `first` on top."""
    order = sorted(names_by_task, key=lambda task: task != first)
    groups = [(task, [(name, name) for name in names_by_task[task]]) for task in order if names_by_task[task]]
    return ([("", empty)] if empty is not None else []) + groups
