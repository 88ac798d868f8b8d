"""Reads for judge menus: the judges with labels of a task in a collection, and how many they gave.

A menu that offered every judge listed judges of other collections and tasks (about 35 in a real
campaign), whose choice compares, estimates or shows nothing. Every menu and every "judges with labels"
read in Assay comes from here, and reads the judges' labels kept beside the labels (`JudgeLabels`, written
by PostgreSQL with every label: annotation/labels/judge_labels.py), a table of a few rows per judge and
collection: one query at any number of labels, where an EXISTS per judge over the label tables grew with
them. `judge_fields` gives several fields of a form the same judges, read once for all their menus.

A label whose value is no judgment (nuggetizer's "failed", a task's `Agreement.excluded`) does not count,
as `LabelTask.rows` leaves it out: a judge with only such labels compares, scores or shows nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.db.models import QuerySet, Sum

from annotation.families import label_task
from annotation.models import Collection, Judge, JudgeLabels
from annotation.typed import choice_field

if TYPE_CHECKING:  # the type checker's package, not installed beside the application
    from django_stubs_ext import WithAnnotations


def _kept(
    collection: Collection, tasks: Iterable[str], conditions: Iterable[str] | None
) -> QuerySet[JudgeLabels]:
    names = [label_task(task).name for task in tasks]
    rows = JudgeLabels.objects.filter(collection=collection, task__in=names)
    return rows if conditions is None else rows.filter(condition__in=list(conditions))


def judges_with_labels(
    *, collection: Collection, task: str | Sequence[str], conditions: Iterable[str] | None = None
) -> QuerySet[Judge]:
    """The judges with at least one label of `task` (or of any of several tasks) in the collection, by
    name: what a judge menu offers. `conditions` narrow the labels to those given in one of them (a task
    whose labels have a condition: support, the TREC RAG nugget steps)."""
    tasks = [task] if isinstance(task, str) else task
    judges = _kept(collection, tasks, conditions).values("judge_id")
    return Judge.objects.filter(pk__in=judges).order_by("name")


class LabelCount(TypedDict):
    labels: int


def judges_with_label_counts(
    *, collection: Collection, task: str, judges: QuerySet[Judge] | None = None
) -> QuerySet[WithAnnotations[Judge, LabelCount]]:
    """The judges (of `judges`, by default all) with labels of `task` in the collection, by name, each
    annotated with `labels`: how many it gave there."""
    base = Judge.objects.all() if judges is None else judges
    # Filtered on the kept rows before the sum, so that it sums only those (one join, grouped by judge).
    labelled = base.filter(label_counts__collection=collection, label_counts__task=label_task(task).name)
    return labelled.annotate(labels=Sum("label_counts__label_count")).order_by("name")


def labels_kept_count(
    *, collection: Collection, task: str, judge_id: int | None = None, condition: str | None = None
) -> int:
    """How many labels of `task` the collection holds (of one judge, in one condition), from the kept
    counts: a list's total that costs the same whatever the number of labels. Only for a task that keeps
    every stored value as a label (the kept counts leave out values that are no judgment)."""
    declared = label_task(task)
    if declared.agreement is not None and declared.agreement.excluded:
        raise ValueError(f"the kept counts of {task} leave out {declared.agreement.excluded}: count its rows")
    rows = _kept(collection, [task], None if condition is None else [condition])
    if judge_id is not None:
        rows = rows.filter(judge_id=judge_id)
    return rows.aggregate(n=Sum("label_count"))["n"] or 0


def label_conditions(*, collection: Collection, task: str) -> set[str]:
    """The conditions the labels of `task` in the collection were given in ("" for a task without)."""
    return set(_kept(collection, [task], None).values_list("condition", flat=True).distinct())


def judge_names_by_task(*, collection: Collection, tasks: Sequence[str]) -> dict[str, list[str]]:
    """{task: names of the judges with labels of it in the collection, by name}, in one query.

    For a menu whose task is chosen in the same form: it offers each task's judges under the task's name.
    """
    names: dict[str, list[str]] = {task: [] for task in tasks}
    rows = (
        _kept(collection, tasks, None)
        .values_list("task", "judge__name")
        .distinct()
        .order_by("judge__name", "task")
    )
    for task, name in rows:
        names[task].append(name)
    return names


def judge_menu(
    names_by_task: dict[str, list[str]], *, first: str | None = None, empty: str | None = "---------"
) -> list[Any]:
    """Choices of a judge menu: the judges grouped under their task, the task `first` on top."""
    order = sorted(names_by_task, key=lambda task: task != first)
    groups = [(task, [(name, name) for name in names_by_task[task]]) for task in order if names_by_task[task]]
    return ([("", empty)] if empty is not None else []) + groups


def judge_fields(form: forms.BaseForm, judges: QuerySet[Judge], names: Sequence[str]) -> None:
    """Gives the judge fields `names` of `form` (model choice fields) the judges `judges`: each takes
    them, and their menus offer them read once between them, when a menu is first drawn (each field's
    own choices would read its queryset again for its menu)."""
    read = functools.cache(lambda: list(judges))
    for name in names:
        field = choice_field(form, name)
        field.queryset = judges
        field.widget.choices = functools.partial(_offered, field, read)


def _offered(field: forms.ModelChoiceField, read: Callable[[], list[Judge]]) -> list[Any]:
    # The choices Django's ModelChoiceIterator gives (its empty choice, its values and labels), from the
    # judges read once.
    iterator = field.iterator(field)
    empty = [("", field.empty_label)] if field.empty_label is not None else []
    return empty + [iterator.choice(judge) for judge in read()]
