"""Reads for judge menus: the judges with labels of a task in a collection.

A menu that offered every judge listed judges of other collections and tasks (about 35 in a real
campaign), whose choice compares, estimates or shows nothing. Each menu here costs one query at any size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import BooleanField, F, Func, Max, Min, Model, OuterRef, QuerySet, Subquery
from django.db.models.lookups import IsNull

from annotation.families import label_task
from annotation.models import Collection, Judge


def judges_with_labels(*, collection: Collection, task: str, **label_filters: Any) -> QuerySet[Judge]:
    """The judges with at least one label of `task` in the collection, by name: what a judge menu offers.

    A judge of another collection or task would give an empty comparison, estimate or list, so menus offer
    only these. One query at any size: a probe per judge for its first label here (`label_filters` narrow
    the labels, e.g. condition="blind"), never a query per judge nor a DISTINCT over a join.
    """
    return (
        Judge.objects.alias(first_label=_first_label(collection, task, **label_filters))
        .filter(first_label__isnull=False)
        .order_by("name")
    )


def has_label_in(labels: QuerySet[Model]) -> IsNull:
    """Whether the judge of the outer query (OuterRef("pk")) has one of `labels`: a condition to filter
    or annotate judges with.

    Its first label by the judge's index, not an EXISTS: PostgreSQL plans an EXISTS over a label table that
    few judges fill (the nugget assignments) as a scan of the table per judge, expecting a judge's first
    label early, so a judge with none here read every label. Ordered by judge, the subquery walks that
    judge's labels in the judge's index and stops at the first in the collection: one index probe for a
    judge with no labels, but all of a judge's labels in other collections for one with labels only there.
    So it is for such tables only; the menus by task probe a judge's labels within the collection's span of
    units instead (`_first_label`).
    """
    first = labels.filter(judge=OuterRef("pk")).order_by("judge").values("pk")[:1]
    return IsNull(Subquery(first), False)


def _first_label(collection: Collection, task: str, **label_filters: Any) -> Subquery:
    """The id of one label of `task` in the collection by the outer judge (NULL when it has none).

    A label reaches its collection through a join (a turn, an answer's run), so a probe of the judge's
    labels alone walks every label of a judge whose labels are all in other collections: the 810,000
    nugget assignments of another evaluation cost the estimates page 4 s. Every label table has an index
    on (judge, the label's first step towards its collection), and a collection's turns, answers and
    nuggets are numbered together as they are imported, so the probe is bounded to the ids between the
    collection's first and last unit (computed once a query): it reads at most the judge's labels in that
    span. A LIMIT-1 scalar subquery rather than EXISTS: PostgreSQL may turn an EXISTS into a hash of every
    label of the collection (80,000 relevance grades here), but a scalar subquery runs as the probe.
    """
    declared = label_task(task)
    labels = declared.model._default_manager.filter(
        judge=OuterRef("pk"), **{declared.collection: collection}, **label_filters
    )
    step, _, rest = declared.collection.partition("__")
    if rest:
        unit = declared.model._meta.get_field(step).related_model
        assert isinstance(unit, type) and issubclass(unit, Model), (
            f"{declared.name}: {step} is no foreign key"
        )
        units = unit._default_manager.filter(**{rest: collection})
        span = units.order_by().values(rest).annotate(first=Min("pk"), last=Max("pk"))
        labels = labels.filter(
            _Pair(F("judge"), F(step), OuterRef("pk"), Subquery(span.values("first")), compare=">="),
            _Pair(F("judge"), F(step), OuterRef("pk"), Subquery(span.values("last")), compare="<="),
        )
    return Subquery(labels.order_by().values("pk")[:1])


class _Pair(Func):
    """`(a, b) >= (c, d)` (or `<=`): a row comparison, which PostgreSQL answers from an index on (a, b) as
    one bounded range. Written as two column conditions instead, the planner may take the index on b
    alone and filter the judge, walking every label of the span (5 s on 810,000 assignments)."""

    output_field = BooleanField()

    def __init__(self, *expressions: Any, compare: str) -> None:
        super().__init__(*expressions)
        self.compare = compare

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> Any:
        parts, params = [], []
        for expression in self.get_source_expressions():
            sql, part = compiler.compile(expression)
            parts.append(sql)
            params.extend(part)
        return f"(({parts[0]}, {parts[1]}) {self.compare} ({parts[2]}, {parts[3]}))", params


def judge_names_by_task(*, collection: Collection, tasks: Sequence[str]) -> dict[str, list[str]]:
    """{task: names of the judges with labels of it in the collection, by name}, in one query.

    For a menu whose task is chosen in the same form: it offers each task's judges under the task's name.
    """
    # Every judge is read with its probes and those with no label here are left out in Python: a WHERE
    # on the probes would run each of them a second time.
    flags = {f"first_{i}": _first_label(collection, task) for i, task in enumerate(tasks)}
    rows = Judge.objects.annotate(**flags).order_by("name").values_list("name", *flags)
    return {task: [row[0] for row in rows if row[i + 1] is not None] for i, task in enumerate(tasks)}


def judge_menu(
    names_by_task: dict[str, list[str]], *, first: str | None = None, empty: str | None = "---------"
) -> list[Any]:
    """Choices of a judge menu: the judges grouped under their task, the task `first` on top."""
    order = sorted(names_by_task, key=lambda task: task != first)
    groups = [(task, [(name, name) for name in names_by_task[task]]) for task in order if names_by_task[task]]
    return ([("", empty)] if empty is not None else []) + groups
