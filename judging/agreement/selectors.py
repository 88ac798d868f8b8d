"""Selectors: the units a judge labelled on a task, and the labels two or more judges gave the same units.

Each label family declares its tasks' units, label scales and rows once (annotation/<family>/family.py), so
agreement on any task is the same computation (`judging.measures.agreement`) over what these selectors read. Every unit carries the number of its topic (the
conversation or information need), for per-topic figures and the bootstrap over topics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import QuerySet

from annotation.families import LABEL_TASKS, label_task
from annotation.labels.family import LabelTask
from annotation.models import Collection, Judge
from judging.measures.agreement import AlphaLevel, Label, Pairs, encode_pairs

Unit = tuple[Any, Any]
LabelsByJudge = dict[int, dict[Unit, tuple[str, Label]]]


@dataclass(frozen=True)
class TaskSpec:
    """A task's label scale: `labels` in scale order; `ordinal` enables weighted kappa."""

    name: str
    unit: str
    labels: tuple[Label, ...]
    label_names: tuple[str, ...]
    ordinal: bool
    alpha_level: AlphaLevel
    binarisable: bool = False


def _spec(task: LabelTask) -> TaskSpec:
    assert task.agreement is not None
    scale = task.agreement.scale
    return TaskSpec(
        name=task.name,
        unit=task.agreement.description,
        labels=scale.values,
        label_names=scale.names,
        ordinal=scale.ordinal,
        alpha_level=scale.alpha_level,
        binarisable=scale.binarisable,
    )


# Each label family declares its tasks once (annotation/<family>/family.py); these are the ones whose
# judges are compared.
TASKS: dict[str, TaskSpec] = {
    name: _spec(task) for name, task in LABEL_TASKS.items() if task.agreement is not None
}

# Tasks whose human labels were given in a condition (from scratch, post-editing a machine's label, or
# blind), and those conditions; a comparison may keep one of them.
HUMAN_CONDITIONS: dict[str, set[str]] = {
    name: set(task.agreement.human_conditions)
    for name, task in LABEL_TASKS.items()
    if task.agreement is not None and task.agreement.human_conditions
}


def task_spec(task: str) -> TaskSpec:
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}") from None


def _rows(
    *,
    collection: Collection,
    task: str,
    judges: Sequence[Judge],
    topics: Sequence[str] | None,
    condition: str | None,
) -> QuerySet:
    task_spec(task)
    declared = label_task(task)
    agreement = declared.agreement
    assert agreement is not None
    rows = declared.rows(collection).filter(judge__in=list(judges))
    if topics:
        rows = rows.filter(**{f"{agreement.topic}__in": list(topics)})
    if condition:
        if task not in HUMAN_CONDITIONS:
            raise ValueError(f"a condition applies to the {', '.join(HUMAN_CONDITIONS)} tasks only")
        # The condition picks which human rows count; rows labelled outside any human condition (machine
        # judges, imported files) are the other side of the comparison and always count.
        human = HUMAN_CONDITIONS[task]
        if condition not in human:
            raise ValueError(f"unknown condition {condition!r}; choose one of {', '.join(sorted(human))}")
        rows = rows.exclude(condition__in=[c for c in human if c != condition])
    return rows.values_list("judge_id", *agreement.unit, agreement.topic, agreement.label)


def _label(value: Label) -> Label:
    # Yes/no tasks are stored as booleans and compared on a 0/1 scale.
    return int(value) if isinstance(value, bool) else value


def labels_by_judge(
    *,
    collection: Collection,
    task: str,
    judges: Sequence[Judge],
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> dict[int, dict[Unit, tuple[str, Label]]]:
    """{judge id: {unit: (topic number, label)}} for several judges in one query."""
    result: dict[int, dict[Unit, tuple[str, Label]]] = {judge.id: {} for judge in judges}
    for judge_id, u1, u2, topic, label in _rows(
        collection=collection, task=task, judges=judges, topics=topics, condition=condition
    ).iterator(chunk_size=5000):
        result[judge_id][(u1, u2)] = (topic, _label(label))
    return result


def pairs_from_labels(
    task: str, labels_a: dict[Unit, tuple[str, Label]], labels_b: dict[Unit, tuple[str, Label]]
) -> Pairs:
    """The units both judges labelled, in a stable order, as coded pairs."""
    shared = sorted(labels_a.keys() & labels_b.keys(), key=lambda unit: (str(unit[0]), str(unit[1])))
    return encode_pairs(
        a=[labels_a[u][1] for u in shared],
        b=[labels_b[u][1] for u in shared],
        topics=np.array([labels_a[u][0] for u in shared], dtype=str),
        labels=task_spec(task).labels,
    )


def reliability_matrix(by_judge: dict[int, dict[Unit, tuple[str, Label]]], task: str) -> np.ndarray:
    """Judges x units of label positions on the task's scale, NaN where a judge gave no label (for
    Krippendorff's alpha over any number of judges)."""
    position = {label: i for i, label in enumerate(task_spec(task).labels)}
    units = sorted(
        set().union(*(labels.keys() for labels in by_judge.values())), key=lambda u: (str(u[0]), str(u[1]))
    )
    column = {unit: i for i, unit in enumerate(units)}
    matrix = np.full((len(by_judge), len(units)), np.nan)
    for row, labels in enumerate(by_judge.values()):
        for unit, (_topic, label) in labels.items():
            matrix[row, column[unit]] = position[label]
    return matrix
