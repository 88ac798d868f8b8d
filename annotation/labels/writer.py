"""What every judgment writer shares: the refusal they raise, what a bulk writer reports, how time adds up.

A `*_submit` records one judge's label of one unit: a revision replaces the label and the time spent on it
adds up. A bulk `*_upsert` restates what a file, a crowd provider or an aggregate says now, so it is
idempotent: a row that says what is stored changes nothing, and a time it gives replaces the stored one
(the same assignment synced twice must not count its time twice).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from django.db import models
from django.utils import timezone

from core.bulk import model_rows_copy


class JudgmentRefused(Exception):
    """The label does not fit its unit (say, a PTKB statement of another conversation)."""


Outcome = Literal["created", "updated", "unchanged"]


@dataclass
class Written:
    """What a bulk writer did, row by row."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0


# The time_spent_ms columns are PostgreSQL integers. Each submission's time is within them, but their
# sum over many revisions need not be: it stops at the largest (24.8 days on one label says enough).
TIME_SPENT_MAX_MS = 2**31 - 1


def time_added(stored: int | None, spent: int | None) -> int | None:
    return stored if spent is None else min((stored or 0) + spent, TIME_SPENT_MAX_MS)


M = TypeVar("M", bound=models.Model)
K = TypeVar("K", bound=Hashable)


def labelled_submit(
    model: type[M],
    *,
    unit: dict[str, Any],
    field: str,
    label: str,
    condition: str,
    shown_label: str = "",
    time_spent_ms: int | None = None,
    create_only: Mapping[str, Any] | None = None,
) -> M:
    """Record or revise one judge's label of one unit (`unit`: the judge and the unit's keys) of a table
    whose rows carry a condition and, when post-editing, the label shown.

    A judge labels a unit in one condition only; `changed` says whether the label moved away from the
    one shown (kept from the first submit); the time spent adds up over revisions. `create_only` holds
    columns a first label sets and a revision leaves alone.
    """
    # Any: the label tables share these columns by convention, not by a common base class.
    row: Any = model._default_manager.select_for_update().filter(**unit).first()
    if row is None:
        return model._default_manager.create(
            **unit,
            **(create_only or {}),
            **{field: label},
            condition=condition,
            shown_label=shown_label,
            changed=(label != shown_label) if shown_label else None,
            time_spent_ms=time_spent_ms,
        )
    if row.condition != condition:
        raise JudgmentRefused(
            f"this unit was judged in condition {row.condition}; a judge never judges a unit in two conditions"
        )
    setattr(row, field, label)
    row.changed = (label != row.shown_label) if row.shown_label else None
    row.time_spent_ms = time_added(row.time_spent_ms, time_spent_ms)
    row.save(update_fields=[field, "changed", "time_spent_ms", "updated_at"])
    return row


# What a new label row of any label table holds besides its judge, unit, label and condition: no label
# shown, so nothing changed from it, no time spent (files, machines and aggregates report none), and its
# times. `labels_restate` appends them to each row it creates.
FRESH_COLUMNS = ("shown_label", "changed", "time_spent_ms", "created_at", "updated_at")


def labels_restate(
    model: type[M],
    *,
    stored: Iterable[tuple[int, K, str]],
    wanted: Mapping[K, str],
    field: str,
    columns: Sequence[str],
    build: Callable[[K, str], tuple[Any, ...]],
) -> Written:
    """Make a judge's labels of many units say what `wanted` says (unit key -> label), given what is
    `stored` ((pk, unit key, label) rows of that judge): new units are created, changed labels updated, the
    rest counted unchanged; a handful of queries whatever the number of units.

    `build(key, label)` gives a new unit's values of `columns` (its judge, unit, label and condition, by
    column name); the new rows are written in one COPY (core/bulk.py), without a model instance each."""
    current = {key: (pk, label) for pk, key, label in stored}
    written = Written()
    created: list[tuple[Any, ...]] = []
    changed: list[M] = []
    now = timezone.now()
    fresh = ("", None, None, now, now)
    for key, label in wanted.items():
        row = current.get(key)
        if row is None:
            created.append((*build(key, label), *fresh))
        elif row[1] != label:
            changed.append(model(id=row[0], updated_at=now, **{field: label}))
        else:
            written.unchanged += 1
    model_rows_copy(model, columns=[*columns, *FRESH_COLUMNS], rows=created)
    model._default_manager.bulk_update(changed, [field, "updated_at"], batch_size=2000)
    written.created, written.updated = len(created), len(changed)
    return written
