"""How a label family declares itself: once, in its package's `family.py`, read by every consumer.

Agreement, the hybrid estimates' tables, judge menus and the console's uploads and downloads read a
family's tasks and files from here rather than each keeping a table of their own, so a new family is its
package plus its import and its place in `FAMILIES` (`annotation/families.py`), the import of its models
in `annotation/models/__init__.py` (for Django to register them) and its name in the families'
independence contract (pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db.models import Model, QuerySet

from annotation.labels.files import Download, Export, Upload
from annotation.models import Collection
from annotation.services import ImportResult


@dataclass(frozen=True)
class Scale:
    """A task's labels as agreement compares them: the values in scale order and their names.

    `ordinal` allows weighted kappa; `alpha_level` is how Krippendorff's alpha reads the values;
    `binarisable` that a threshold on the scale makes a yes/no task (relevant at grade >= T).
    """

    values: tuple[int | str, ...]
    names: tuple[str, ...]
    ordinal: bool = False
    alpha_level: Literal["nominal", "ordinal"] = "nominal"
    binarisable: bool = False


@dataclass(frozen=True)
class Agreement:
    """How agreement reads one judge's labels of a task: (unit key -> label), with the unit's topic.

    `unit` names the two fields that make a unit's key, `topic` the path from a label to its topic's
    number (per-topic figures, the bootstrap over topics), `label` the field holding the value.
    `excluded` are stored values that are no judgment (nuggetizer's "failed"); `human_conditions` the
    conditions a person's label may have been given in, of which a comparison may keep one.
    """

    description: str
    unit: tuple[str, str]
    topic: str
    label: str
    scale: Scale
    excluded: tuple[int | str, ...] = ()
    human_conditions: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Hybrid:
    """The measures a hybrid (human + machine) estimate may take of a task, per run and turn.

    `measures` are the names the task accepts (`any_measure` describes the ones it accepts beyond those,
    as relevance takes any ir_measures measure); `default` is asked for when none is named; `reads` are
    the label models a unit table reads, so that a change to them makes a finished simulation stale;
    `needs_gold` that the table needs a gold nugget judge.
    """

    default: str
    measures: tuple[str, ...] = ()
    any_measure: str = ""
    reads: tuple[type[Model], ...] = ()
    needs_gold: bool = False

    def describe(self) -> str:
        """The measures, for error messages."""
        if self.any_measure:
            return f"{self.any_measure} or {', '.join(self.measures)}" if self.measures else self.any_measure
        return ", ".join(self.measures)


@dataclass(frozen=True)
class LabelTask:
    """One kind of label a family's judges give: its rows and how to reach their collection.

    `collection` is the path from a label row to its collection. A task without `agreement` is not
    compared between judges (a nugget list, a gold response); without `hybrid`, not estimated.
    """

    name: str
    title: str
    model: type[Model]
    collection: str
    agreement: Agreement | None = None
    hybrid: Hybrid | None = None

    def rows(self, collection: Collection) -> QuerySet[Any]:
        """The task's label rows on a collection, without the stored values that are no judgment."""
        rows = self.model._default_manager.filter(**{self.collection: collection})
        if self.agreement is not None and self.agreement.excluded:
            rows = rows.exclude(**{f"{self.agreement.label}__in": list(self.agreement.excluded)})
        return rows


@dataclass(frozen=True)
class FileKind:
    """A file a family takes in and may give out, as the console's uploads and downloads read it.

    `kind` is the console's and commands' word for it and `title` its name on pages (`formats`, if any,
    follows it on the upload menu). `importer` takes an upload in through the service its import command
    calls, its counts by default of `records`; `options` are the upload form's options it reads beyond the
    judge's (judge, kind, model, prompt version). `exporter`, if the console offers the file as a
    download, writes it through the function its export command calls, reading `download_options` of
    the download form; `task` is the label task its rows are, whose judges with labels on a collection
    its download offers. `progress_unit` is what a running import's `done of total` counts.
    """

    kind: str
    title: str
    records: str
    importer: Callable[[Upload], ImportResult]
    options: tuple[str, ...] = ()
    formats: str = ""
    exporter: Callable[[Download], Export] | None = None
    download_options: tuple[str, ...] = ()
    task: str = ""
    progress_unit: str = "records stored"

    @property
    def upload_title(self) -> str:
        return f"{self.title} ({self.formats})" if self.formats else self.title


@dataclass(frozen=True)
class LabelFamily:
    """A label family: its name (its package's), its display name, its tasks and its files."""

    name: str
    title: str
    tasks: tuple[LabelTask, ...]
    files: tuple[FileKind, ...] = field(default=())
