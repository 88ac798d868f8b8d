"""Selectors: the units a judge labelled on a task, and the labels two or more judges gave the same units.

Each task names its unit and its label scale once (`TASKS`), so agreement on any task is the same computation
(`judging.agreement.metrics`) over what these selectors read. Every unit carries the number of its topic (the
conversation or information need), for per-topic figures and the bootstrap over topics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db.models import QuerySet

from annotation.models import (
    NUGGET_LABEL_FAILED,
    Collection,
    Condition,
    Judge,
    NtnJudgment,
    NtrJudgment,
    NuggetAssignment,
    NuggetImportanceJudgment,
    NuggetSupport,
    PtkbJudgment,
    RelevanceGrade,
    RelevanceJudgment,
    SupportJudgment,
    SupportLabel,
)
from judging.agreement.metrics import AlphaLevel, Pairs, encode_pairs

if TYPE_CHECKING:
    pass

Unit = tuple[Any, Any]
LabelsByJudge = dict[int, dict[Unit, tuple[str, Any]]]


@dataclass(frozen=True)
class TaskSpec:
    """A task's label scale: `labels` in scale order; `ordinal` enables weighted kappa."""

    name: str
    unit: str
    labels: tuple[Any, ...]
    label_names: tuple[str, ...]
    ordinal: bool
    alpha_level: AlphaLevel
    binarisable: bool = False


_ASSIGNMENT = (NuggetSupport.NONE.value, NuggetSupport.PARTIAL.value, NuggetSupport.SUPPORT.value)

TASKS: dict[str, TaskSpec] = {
    "relevance": TaskSpec(
        name="relevance",
        unit="(turn, passage)",
        labels=tuple(int(g) for g in RelevanceGrade.values),
        label_names=tuple(str(label) for label in RelevanceGrade.labels),
        ordinal=True,
        alpha_level="ordinal",
        binarisable=True,
    ),
    "ptkb": TaskSpec(
        "ptkb", "(turn, PTKB statement)", (0, 1), ("not relevant", "relevant"), False, "nominal"
    ),
    "ntr": TaskSpec("ntr", "(response, gold nugget)", (0, 1), ("not matched", "matched"), False, "nominal"),
    "ntn": TaskSpec(
        "ntn", "(response nugget, gold nugget)", (0, 1), ("not entailed", "entailed"), False, "nominal"
    ),
    # Support is ordered NS < PS < FS (weights 0, 0.5, 1), so weighted kappa is meaningful; the papers
    # report alpha on it as nominal categories.
    "support": TaskSpec(
        "support",
        "(answer sentence, citation)",
        (SupportLabel.NONE.value, SupportLabel.PARTIAL.value, SupportLabel.FULL.value),
        (str(SupportLabel.NONE.label), str(SupportLabel.PARTIAL.label), str(SupportLabel.FULL.label)),
        True,
        "nominal",
    ),
    # TREC RAG nugget evaluation: vital/okay of a nugget, and the three-level assignment of (answer,
    # nugget), ordered like support (not_support 0, partial 0.5, support 1).
    "nugget-importance": TaskSpec(
        "nugget-importance", "nugget", ("okay", "vital"), ("Okay", "Vital"), False, "nominal"
    ),
    "nugget-assignment": TaskSpec(
        "nugget-assignment",
        "(answer, nugget)",
        _ASSIGNMENT,
        tuple(NuggetSupport(v).label for v in _ASSIGNMENT),
        True,
        "nominal",
    ),
}

# Tasks whose human labels were given in a condition (from scratch, post-editing a machine's label, or
# blind), and those conditions; a comparison may keep one of them.
HUMAN_CONDITIONS: dict[str, set[str]] = {
    "support": {
        Condition.SCRATCH,
        Condition.POST_EDIT,
        Condition.BLIND,
    },
    "nugget-importance": {Condition.SCRATCH, Condition.POST_EDIT},
    "nugget-assignment": {Condition.SCRATCH, Condition.POST_EDIT},
}


def task_spec(task: str) -> TaskSpec:
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}") from None


# Per task: the judgment rows of a collection, and the columns (unit part 1, unit part 2, topic number, label).
_ROWS: dict[str, tuple[Callable[[Collection], QuerySet], str, tuple[str, str, str, str]]] = {
    "relevance": (
        lambda c: RelevanceJudgment.objects.filter(turn__collection=c),
        "turn__topic__number",
        ("turn_id", "passage_id", "turn__topic__number", "grade"),
    ),
    "ptkb": (
        lambda c: PtkbJudgment.objects.filter(turn__collection=c),
        "turn__topic__number",
        ("turn_id", "statement_id", "turn__topic__number", "relevant"),
    ),
    "ntr": (
        lambda c: NtrJudgment.objects.filter(response__run__collection=c),
        "response__turn__topic__number",
        ("response_id", "nugget_id", "response__turn__topic__number", "matched"),
    ),
    "ntn": (
        lambda c: NtnJudgment.objects.filter(gold_nugget__turn__collection=c),
        "gold_nugget__turn__topic__number",
        ("response_nugget_id", "gold_nugget_id", "gold_nugget__turn__topic__number", "entails"),
    ),
    "support": (
        lambda c: SupportJudgment.objects.filter(sentence__response__run__collection=c),
        "sentence__response__turn__topic__number",
        ("sentence_id", "citation_index", "sentence__response__turn__topic__number", "label"),
    ),
    "nugget-importance": (
        # nuggetizer's "failed" (its LLM gave no readable label) is no judgment to agree or disagree with.
        lambda c: NuggetImportanceJudgment.objects.filter(nugget__turn__collection=c).exclude(
            importance=NUGGET_LABEL_FAILED
        ),
        "nugget__turn__topic__number",
        ("nugget_id", "nugget__turn_id", "nugget__turn__topic__number", "importance"),
    ),
    "nugget-assignment": (
        lambda c: NuggetAssignment.objects.filter(response__run__collection=c).exclude(
            label=NUGGET_LABEL_FAILED
        ),
        "response__turn__topic__number",
        ("response_id", "nugget_id", "response__turn__topic__number", "label"),
    ),
}


def _rows(
    *,
    collection: Collection,
    task: str,
    judges: Sequence[Judge],
    topics: Sequence[str] | None,
    condition: str | None,
) -> QuerySet:
    task_spec(task)
    base, topic_field, columns = _ROWS[task]
    rows = base(collection).filter(judge__in=list(judges))
    if topics:
        rows = rows.filter(**{f"{topic_field}__in": list(topics)})
    if condition:
        if task not in HUMAN_CONDITIONS:
            raise ValueError(f"a condition applies to the {', '.join(HUMAN_CONDITIONS)} tasks only")
        # The condition picks which human rows count; rows labelled outside any human condition (machine
        # judges, imported files) are the other side of the comparison and always count.
        human = HUMAN_CONDITIONS[task]
        if condition not in human:
            raise ValueError(f"unknown condition {condition!r}; choose one of {', '.join(sorted(human))}")
        rows = rows.exclude(condition__in=[c for c in human if c != condition])
    return rows.values_list("judge_id", *columns)


def _label(value: Any) -> Any:
    # Yes/no tasks are stored as booleans and compared on a 0/1 scale.
    return int(value) if isinstance(value, bool) else value


def judge_labels(
    *,
    collection: Collection,
    task: str,
    judge: Judge,
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> dict[Unit, tuple[str, Any]]:
    """{unit: (topic number, label)} of one judge on a task in a collection."""
    return {
        (u1, u2): (topic, _label(label))
        for _judge, u1, u2, topic, label in _rows(
            collection=collection, task=task, judges=[judge], topics=topics, condition=condition
        ).iterator(chunk_size=5000)
    }


def labels_by_judge(
    *,
    collection: Collection,
    task: str,
    judges: Sequence[Judge],
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> dict[int, dict[Unit, tuple[str, Any]]]:
    """{judge id: {unit: (topic number, label)}} for several judges in one query."""
    result: dict[int, dict[Unit, tuple[str, Any]]] = {judge.id: {} for judge in judges}
    for judge_id, u1, u2, topic, label in _rows(
        collection=collection, task=task, judges=judges, topics=topics, condition=condition
    ).iterator(chunk_size=5000):
        result[judge_id][(u1, u2)] = (topic, _label(label))
    return result


def pairs_from_labels(
    task: str, labels_a: dict[Unit, tuple[str, Any]], labels_b: dict[Unit, tuple[str, Any]]
) -> Pairs:
    """The units both judges labelled, in a stable order, as coded pairs."""
    shared = sorted(labels_a.keys() & labels_b.keys(), key=lambda unit: (str(unit[0]), str(unit[1])))
    return encode_pairs(
        a=[labels_a[u][1] for u in shared],
        b=[labels_b[u][1] for u in shared],
        topics=np.array([labels_a[u][0] for u in shared], dtype=str),
        labels=task_spec(task).labels,
    )


def paired_labels(
    *,
    collection: Collection,
    task: str,
    judge_a: Judge,
    judge_b: Judge,
    topics: Sequence[str] | None = None,
    condition: str | None = None,
) -> Pairs:
    """Labels of judges A and B on the units both labelled."""
    by_judge = labels_by_judge(
        collection=collection, task=task, judges=[judge_a, judge_b], topics=topics, condition=condition
    )
    return pairs_from_labels(task, by_judge[judge_a.id], by_judge[judge_b.id])


def reliability_matrix(by_judge: dict[int, dict[Unit, tuple[str, Any]]], task: str) -> np.ndarray:
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


def judges_with_labels(*, collection: Collection, task: str, condition: str | None = None) -> QuerySet[Judge]:
    """Judges that gave at least one label on the task in the collection."""
    task_spec(task)
    rows = _ROWS[task][0](collection)
    if condition:
        rows = rows.filter(condition=condition)
    return Judge.objects.filter(id__in=rows.values("judge_id")).order_by("name")
