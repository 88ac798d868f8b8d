"""The triggers that keep `JudgeLabels` (which judge has how many labels of which task in which collection)
true, written by PostgreSQL with the labels.

Each label task's table (`annotation.families.LABEL_TASKS`) carries three statement-level AFTER triggers
with transition tables, one per event (PostgreSQL allows one event to a trigger that has them), and one
on TRUNCATE. Each runs a function made for its task from the task's declaration: the join from a label
row to its collection follows `LabelTask.collection` through the models' `_meta`.

- An INSERT adds the statement's rows to the count of their (collection, condition, judge), in one
  `INSERT ... ON CONFLICT DO UPDATE`. That row stays locked until the writer commits, which only another
  writer of the same judge's labels of that task in that collection waits for: an assessor is a judge of
  their own, so two assessors' grades never wait for each other. The count it keeps makes deletes exact
  and the judges' label counts (the pool form's filter judges, a collection's page) flat.
- A DELETE takes the rows off their counts and removes the rows left at zero, without reading the label
  table: its cost is the statement's rows, never the table's size, so no plan depends on the statistics.
- An UPDATE does nothing unless it changed a row's judge, unit, condition or whether its value is a
  judgment: the grade statement's regrade (`INSERT ... ON CONFLICT DO UPDATE`) fires the INSERT trigger
  with no rows and this one with rows whose key is unchanged, one comparison of the two transition
  tables. A changed row moves from its old key's count to its new one's.
- A TRUNCATE empties the task's rows.

`judge_labels_install` puts them in place after `migrate` (and after a test flush), from annotation's
`post_migrate`, idempotently and on the tables that exist. A task whose triggers are missing, or whose
functions differ from what this module makes of its declaration now, has them (re)made and its rows
rebuilt from its labels in one transaction: an existing database and a test database made without
migrations start true, and a writer waits for the rebuild (CREATE TRIGGER locks the table against
writes until commit) rather than slipping between the rebuild and the triggers.

Not followed: a label's parents moving (a turn to another collection, a response to another run), which
nothing in Assay does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import connections, models, transaction
from psycopg import sql

from annotation.families import LABEL_TASKS
from annotation.labels.family import LabelTask
from annotation.models import Collection, JudgeLabels
from core.triggers import tables_present, triggers_on

PREFIX = "assay_judge_labels"
TRUNCATE_FUNCTION = f"{PREFIX}_truncate"


def _name(name: str) -> str:
    return sql.Identifier(name).as_string()


def _literal(value: object) -> str:
    return sql.Literal(value).as_string()


KEPT = _name(JudgeLabels._meta.db_table)
TRUNCATE_BODY = "\nBEGIN\nDELETE FROM " + KEPT + " WHERE task = TG_ARGV[0];\nRETURN NULL;\nEND\n"


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any] | None:
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return None
    return field if isinstance(field, models.Field) else None


@dataclass(frozen=True)
class _Shape:
    """How a task's label rows map to kept rows: the joins from a row (alias `r`) to its collection; the
    collection, condition and judge of a row; the columns whose change moves a row to another kept row;
    and which values are no judgment."""

    joins: str
    collection: str
    condition: str
    judge: str
    key_columns: tuple[str, ...]
    label: str
    excluded: str
    pk: str

    def judgment(self, alias: str) -> str:
        """Whether the row `alias` is a judgment (a value outside the task's excluded ones)."""
        return f"{alias}.{self.label} NOT IN ({self.excluded})" if self.excluded else "TRUE"


def _shape(task: LabelTask) -> _Shape:
    model = task.model
    parts = task.collection.split("__")
    joins, alias, current = [], "r", model
    for depth, part in enumerate(parts, start=1):
        field = _field(current, part)
        if not isinstance(field, models.ForeignKey):
            raise ImproperlyConfigured(f"{task.name}: {part!r} of {task.collection!r} is not a foreign key")
        if depth == len(parts):
            if field.related_model is not Collection:
                raise ImproperlyConfigured(f"{task.name}: {task.collection!r} does not end at a collection")
            collection = f"{alias}.{_name(field.column)}"
            break
        target = field.related_model
        assert isinstance(target, type) and issubclass(target, models.Model)
        joined = f"j{depth}"
        joins.append(
            f"JOIN {_name(target._meta.db_table)} {joined} "
            f"ON {joined}.{_name(field.target_field.column)} = {alias}.{_name(field.column)}"
        )
        alias, current = joined, target
    unit, judge, condition = _field(model, parts[0]), _field(model, "judge"), _field(model, "condition")
    assert unit is not None and judge is not None and model._meta.pk is not None
    key = [judge.column, unit.column] + ([condition.column] if condition is not None else [])
    label, excluded = "", ""
    if task.agreement is not None and task.agreement.excluded:
        label_field = _field(model, task.agreement.label)
        assert label_field is not None
        label = _name(label_field.column)
        excluded = ", ".join(_literal(value) for value in task.agreement.excluded)
    return _Shape(
        joins=" ".join(joins),
        collection=collection,
        condition=f"r.{_name(condition.column)}" if condition is not None else "''",
        judge=f"r.{_name(judge.column)}",
        key_columns=tuple(_name(column) for column in key),
        label=label,
        excluded=excluded,
        pk=_name(model._meta.pk.column),
    )


def _counts(shape: _Shape, source: str) -> str:
    """(collection_id, condition, judge_id, n) of the judgments among `source`'s rows."""
    return (
        f"SELECT {shape.collection} AS collection_id, {shape.condition} AS condition, "
        f"{shape.judge} AS judge_id, count(*) AS n FROM {source} r {shape.joins} "
        f"WHERE {shape.judgment('r')} GROUP BY 1, 2, 3"
    )


def _add(task: str, shape: _Shape, source: str) -> str:
    # In one order, so that two statements adding to the same rows lock them in the same order.
    return (
        f"INSERT INTO {KEPT} AS k (collection_id, task, condition, judge_id, label_count) "
        f"SELECT s.collection_id, {_literal(task)}, s.condition, s.judge_id, s.n FROM ({_counts(shape, source)}) s "
        "ORDER BY s.collection_id, s.condition, s.judge_id "
        "ON CONFLICT (collection_id, task, condition, judge_id) "
        "DO UPDATE SET label_count = k.label_count + excluded.label_count"
    )


def _remove(task: str, shape: _Shape, source: str) -> str:
    # The UPDATE locks the rows it takes from, so no writer adds to one between it and the removal of the
    # rows it left at zero (the next statement, which sees them as this one left them).
    return (
        f"WITH gone AS ({_counts(shape, source)}), "
        f"taken AS (UPDATE {KEPT} k SET label_count = k.label_count - g.n FROM gone g "
        f"WHERE k.collection_id = g.collection_id AND k.task = {_literal(task)} "
        "AND k.condition = g.condition AND k.judge_id = g.judge_id RETURNING k.id, k.label_count) "
        "SELECT array_agg(id) FILTER (WHERE label_count <= 0) INTO emptied FROM taken;\n"
        f"IF emptied IS NOT NULL THEN DELETE FROM {KEPT} WHERE id = ANY(emptied); END IF"
    )


def _body(statements: str, *, emptied: bool = False) -> str:
    declare = "DECLARE emptied bigint[];\n" if emptied else ""
    return f"\n{declare}BEGIN\n{statements};\nRETURN NULL;\nEND\n"


def _slug(task: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", task.lower())


@dataclass(frozen=True)
class Trigger:
    """One trigger on a label table: its name, what fires it, and the function it runs (its name, its
    source as PostgreSQL keeps it, the argument it is given)."""

    name: str
    fires: str
    function: str
    body: str
    argument: str = ""


@dataclass(frozen=True)
class TaskTriggers:
    """What keeps one task's rows: its table, its triggers, and the statements that rebuild the task's
    rows from its labels."""

    task: str
    table: str
    triggers: tuple[Trigger, ...]
    rebuild: tuple[str, ...]


def task_triggers(task: LabelTask) -> TaskTriggers:
    """One task's triggers and rebuild, made from its declaration."""
    shape = _shape(task)
    pk = shape.pk
    changed = " OR ".join(f"o.{column} IS DISTINCT FROM n.{column}" for column in shape.key_columns)
    if shape.excluded:
        changed += f" OR ({shape.judgment('o')}) IS DISTINCT FROM ({shape.judgment('n')})"
    moved = f"old_rows o JOIN new_rows n ON n.{pk} = o.{pk} WHERE {changed}"
    update = (
        f"IF EXISTS (SELECT 1 FROM {moved}) THEN\n"
        f"{_remove(task.name, shape, f'(SELECT o.* FROM {moved})')};\n"
        f"{_add(task.name, shape, f'(SELECT n.* FROM {moved})')};\n"
        "END IF"
    )
    table = _name(task.model._meta.db_table)
    slug = f"{PREFIX}_{_slug(task.name)}"
    statement = "FOR EACH STATEMENT"
    return TaskTriggers(
        task=task.name,
        table=task.model._meta.db_table,
        triggers=(
            Trigger(
                name=f"{slug}_insert",
                fires=f"AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows {statement}",
                function=f"{slug}_insert",
                body=_body(_add(task.name, shape, "new_rows")),
            ),
            Trigger(
                name=f"{slug}_update",
                fires=f"AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows {statement}",
                function=f"{slug}_update",
                body=_body(update, emptied=True),
            ),
            Trigger(
                name=f"{slug}_delete",
                fires=f"AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows {statement}",
                function=f"{slug}_delete",
                body=_body(_remove(task.name, shape, "old_rows"), emptied=True),
            ),
            Trigger(
                name=f"{slug}_truncate",
                fires=f"AFTER TRUNCATE ON {table} {statement}",
                function=TRUNCATE_FUNCTION,
                body=TRUNCATE_BODY,
                argument=_literal(task.name),
            ),
        ),
        rebuild=(f"DELETE FROM {KEPT} WHERE task = {_literal(task.name)}", _add(task.name, shape, table)),
    )


def judge_labels_install(*, using: str = "default") -> list[str]:
    """Install the triggers of every label task whose table exists and whose triggers are missing or made
    otherwise than this module makes them now, and rebuild those tasks' rows from their labels, in one
    transaction; the tasks so (re)made. Triggers of this module's no task makes any more are dropped."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return []
    wanted = [task_triggers(task) for task in LABEL_TASKS.values()]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        present = set(tables_present(cursor, [JudgeLabels._meta.db_table, *(t.table for t in wanted)]))
        if JudgeLabels._meta.db_table not in present:
            return []  # made by a later migrate, which installs these after it
        wanted = [t for t in wanted if t.table in present]
        installed = triggers_on(cursor, [t.table for t in wanted])
        names = {trigger.name for t in wanted for trigger in t.triggers}
        for table, triggers in installed.items():
            for name in triggers:
                if name.startswith(PREFIX) and name not in names:
                    cursor.execute(f"DROP TRIGGER {_name(name)} ON {_name(table)}")
        stale = [
            t
            for t in wanted
            if any(installed.get(t.table, {}).get(trigger.name) != trigger.body for trigger in t.triggers)
        ]
        for t in stale:
            for trigger in t.triggers:
                function = _name(trigger.function)
                cursor.execute(
                    f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql"
                    f" AS $body${trigger.body}$body$"
                )
                cursor.execute(
                    f"CREATE OR REPLACE TRIGGER {_name(trigger.name)} {trigger.fires}"
                    f" EXECUTE FUNCTION {function}({trigger.argument})"
                )
            for statement in t.rebuild:
                cursor.execute(statement)
    return [t.task for t in stale]


def judge_labels_install_receiver(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """annotation's `post_migrate` receiver: the judge labels' triggers, after migrate and test flushes."""
    judge_labels_install(using=using)
