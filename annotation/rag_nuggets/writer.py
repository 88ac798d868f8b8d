"""The writers of TREC RAG nugget evaluation: ordered nugget lists, vital/okay, and nugget assignment.

Machine judges, file imports, the assessor pages and crowd aggregation all record through these, so a
label's scale, its condition (a judge labels a unit in one condition only) and how its time adds up are
the same whoever gives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.labels.writer import JudgmentRefused, Written, labels_restate, time_added
from annotation.models import (
    MAX_NUGGET_TEXT,
    NUGGET_LABEL_FAILED,
    Collection,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetImportance,
    NuggetImportanceJudgment,
    NuggetSupport,
    Response,
    Turn,
)
from core.bulk import in_array

IMPORTANCE_LABELS = frozenset(NuggetImportance.values)
ASSIGNMENT_LABELS = frozenset(NuggetSupport.values)
# Many labels at once (files, machine jobs, crowd aggregates) may also keep nuggetizer's "failed"; a person
# on a page always gives a label of the scale.
_BULK_IMPORTANCE = IMPORTANCE_LABELS | {NUGGET_LABEL_FAILED}
_BULK_ASSIGNMENT = ASSIGNMENT_LABELS | {NUGGET_LABEL_FAILED}


def _label_check(label: str, allowed: frozenset[str]) -> None:
    if label not in allowed:
        raise JudgmentRefused(f"label must be one of {', '.join(sorted(allowed))}, not {label!r}")


# --- Ordered nugget lists ------------------------------------------------------------------------


@dataclass(frozen=True)
class NuggetDraft:
    """One nugget of an ordered list: its key within the turn and its text."""

    key: str
    text: str


@transaction.atomic
def nugget_list_replace(
    *, judge: Judge, turn: Turn, nuggets: Sequence[NuggetDraft], originals: dict[str, int] | None = None
) -> Written:
    """Make the judge's nugget list of a turn be `nuggets`, in that order.

    Nuggets are matched by key: a kept key keeps its row (and the labels that point at it) and takes the
    new text and place; a key no longer listed is deleted with its labels. `originals` maps a key to the
    pk of the nugget it was made from (post-editing another judge's list).
    """
    keys = [draft.key for draft in nuggets]
    if len(set(keys)) != len(keys):
        raise JudgmentRefused("two nuggets of a list share a key")
    for draft in nuggets:
        if not draft.key.strip() or len(draft.key) > 32:
            raise JudgmentRefused(f"a nugget key must be 1-32 characters, not {draft.key!r}")
        if not draft.text.strip():
            raise JudgmentRefused(f"nugget {draft.key} has no text")
        if len(draft.text) > MAX_NUGGET_TEXT:
            raise JudgmentRefused(
                f"nugget {draft.key} has {len(draft.text):,} characters; a nugget has at most {MAX_NUGGET_TEXT:,}"
            )
    originals = originals or {}
    stored = {n.key: n for n in Nugget.objects.select_for_update().filter(judge=judge, turn=turn)}
    written = Written()
    removed = [n.pk for key, n in stored.items() if key not in set(keys)]
    if removed:
        Nugget.objects.filter(pk__in=removed).delete()
        written.removed = len(removed)
    created: list[Nugget] = []
    changed: list[Nugget] = []
    now = timezone.now()
    for position, draft in enumerate(nuggets):
        current = stored.get(draft.key)
        if current is None:
            created.append(
                Nugget(
                    judge=judge,
                    turn=turn,
                    key=draft.key,
                    text=draft.text,
                    position=position,
                    original_id=originals.get(draft.key),
                )
            )
        elif (current.text, current.position) != (draft.text, position):
            current.text, current.position, current.updated_at = draft.text, position, now
            changed.append(current)
        else:
            written.unchanged += 1
    Nugget.objects.bulk_create(created, batch_size=1000)
    Nugget.objects.bulk_update(changed, ["text", "position", "updated_at"], batch_size=1000)
    written.created, written.updated = len(created), len(changed)
    return written


# --- A page of labels (pages) ----------------------------------------------------------------------


def _page_submit(
    model: type[NuggetImportanceJudgment] | type[NuggetAssignment],
    *,
    unit: dict[str, Any],
    field: str,
    labels: Mapping[int, str],
    condition: str,
    shown: Mapping[int, str],
    time_spent_ms: int | None,
) -> None:
    """`labelled_submit` for a page of nuggets (`labels`: nugget pk -> label) that share the rest of their
    unit: the same rules, in a fixed number of queries however many nuggets the page shows. The page's
    time is shared out evenly over its nuggets. A machine's "failed" was no label: nothing was shown."""
    shown = {k: v for k, v in shown.items() if v != NUGGET_LABEL_FAILED}
    share = None if time_spent_ms is None or not labels else time_spent_ms // len(labels)
    # Any: the two label tables share these columns by convention, not by a common base class.
    stored: dict[int, Any] = {
        row.nugget_id: row
        for row in model._default_manager.select_for_update().filter(**unit, nugget_id__in=list(labels))
    }
    created: list[Any] = []
    revised: list[Any] = []
    now = timezone.now()
    for nugget_id, label in labels.items():
        row = stored.get(nugget_id)
        if row is None:
            before = shown.get(nugget_id, "")
            created.append(
                model(
                    **unit,
                    nugget_id=nugget_id,
                    **{field: label},
                    condition=condition,
                    shown_label=before,
                    changed=(label != before) if before else None,
                    time_spent_ms=share,
                )
            )
            continue
        if row.condition != condition:
            raise JudgmentRefused(
                f"this unit was judged in condition {row.condition}; a judge never judges a unit in two conditions"
            )
        setattr(row, field, label)
        row.changed = (label != row.shown_label) if row.shown_label else None
        row.time_spent_ms = time_added(row.time_spent_ms, share)
        row.updated_at = now
        revised.append(row)
    model._default_manager.bulk_create(created)
    model._default_manager.bulk_update(revised, [field, "changed", "time_spent_ms", "updated_at"])


def _nuggets_of_turn(turn_id: int, labels: Mapping[int, str], allowed: frozenset[str]) -> None:
    for label in labels.values():
        _label_check(label, allowed)
    known = set(Nugget.objects.filter(turn_id=turn_id, pk__in=list(labels)).values_list("pk", flat=True))
    if set(labels) - known:
        raise JudgmentRefused(f"nuggets {sorted(set(labels) - known)} are not nuggets of this turn")


@transaction.atomic
def importance_judgments_submit(
    *,
    judge: Judge,
    turn: Turn,
    labels: Mapping[int, str],
    condition: str,
    shown: Mapping[int, str] | None = None,
    time_spent_ms: int | None = None,
) -> None:
    """A page of vital/okay labels: record or revise the judge's label of each nugget of the turn in
    `labels` (nugget pk -> label; `shown`: the label shown for it when post-editing); time spent adds up
    over revisions."""
    _nuggets_of_turn(turn.pk, labels, IMPORTANCE_LABELS)
    _page_submit(
        NuggetImportanceJudgment,
        unit={"judge": judge},
        field="importance",
        labels=labels,
        condition=condition,
        shown=shown or {},
        time_spent_ms=time_spent_ms,
    )


@transaction.atomic
def nugget_assignments_submit(
    *,
    judge: Judge,
    response: Response,
    labels: Mapping[int, str],
    condition: str,
    shown: Mapping[int, str] | None = None,
    time_spent_ms: int | None = None,
) -> None:
    """A page of one answer's labels: record or revise the judge's label of (answer, nugget) for each
    nugget in `labels` (nugget pk -> label; `shown`: the label shown for it when post-editing); every
    nugget must be of the answer's turn."""
    _nuggets_of_turn(response.turn_id, labels, ASSIGNMENT_LABELS)
    _page_submit(
        NuggetAssignment,
        unit={"judge": judge, "response": response},
        field="label",
        labels=labels,
        condition=condition,
        shown=shown or {},
        time_spent_ms=time_spent_ms,
    )


# --- Many labels at once (files, machine judges, crowd aggregates) ---------------------------------


@dataclass(frozen=True)
class ImportanceRow:
    nugget_id: int
    importance: str


@dataclass(frozen=True)
class AssignmentRow:
    response_id: int
    nugget_id: int
    label: str


@transaction.atomic
def importance_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Iterable[ImportanceRow], condition: str
) -> Written:
    """Make the judge's vital/okay labels of the given nuggets of `collection` say what `rows` say."""
    wanted = {row.nugget_id: row for row in rows}
    for row in wanted.values():
        _label_check(row.importance, _BULK_IMPORTANCE)
    known = set(
        Nugget.objects.filter(turn__collection=collection, pk__in=in_array(wanted)).values_list(
            "pk", flat=True
        )
    )
    if outside := sorted(set(wanted) - known):
        raise JudgmentRefused(f"nugget {outside[0]} is not of this collection")
    # Only the nuggets at hand, as in nugget_assignments_upsert.
    stored = NuggetImportanceJudgment.objects.filter(judge=judge, nugget_id__in=in_array(wanted))
    return labels_restate(
        NuggetImportanceJudgment,
        stored=stored.values_list("id", "nugget_id", "importance"),
        wanted={nugget_id: row.importance for nugget_id, row in wanted.items()},
        field="importance",
        columns=("judge_id", "nugget_id", "importance", "condition"),
        build=lambda nugget_id, label: (judge.pk, nugget_id, label, condition),
    )


@transaction.atomic
def nugget_assignments_upsert(
    *,
    judge: Judge,
    collection: Collection,
    rows: Iterable[AssignmentRow],
    condition: str,
    remove: Iterable[tuple[int, int]] = (),
) -> Written:
    """Make the judge's assignment labels of the given (answer, nugget) pairs of `collection` say what
    `rows` say (an assignment file, a machine job's window, a crowd aggregate). The (answer id, nugget id)
    pairs in `remove` lose the judge's label: a crowd pair whose vote became a tie has none any more."""
    wanted = {(row.response_id, row.nugget_id): row for row in rows}
    dropped = {key for key in remove if key not in wanted}
    for row in wanted.values():
        _label_check(row.label, _BULK_ASSIGNMENT)
    answer_turns = dict(
        Response.objects.filter(
            run__collection=collection, pk__in=in_array({r for r, _ in wanted})
        ).values_list("pk", "turn_id")
    )
    nugget_turns = dict(
        Nugget.objects.filter(
            turn__collection=collection, pk__in=in_array({n for _, n in wanted})
        ).values_list("pk", "turn_id")
    )
    for response_id, nugget_id in wanted:
        if response_id not in answer_turns or nugget_id not in nugget_turns:
            raise JudgmentRefused(f"answer {response_id} or nugget {nugget_id} is not of this collection")
        if answer_turns[response_id] != nugget_turns[nugget_id]:
            raise JudgmentRefused(f"nugget {nugget_id} is not a nugget of answer {response_id}'s turn")
    # Only the answers at hand: a machine job writes a few windows at a time, and reading every label
    # the judge has in the collection on each write made a job's writes grow with what it had written.
    answers = {response_id for response_id, _ in wanted} | {response_id for response_id, _ in dropped}
    stored = list(
        NuggetAssignment.objects.filter(judge=judge, response_id__in=in_array(answers)).values_list(
            "id", "response_id", "nugget_id", "label"
        )
    )
    stale = [pk for pk, response_id, nugget_id, _ in stored if (response_id, nugget_id) in dropped]
    written = labels_restate(
        NuggetAssignment,
        stored=((pk, (response_id, nugget_id), label) for pk, response_id, nugget_id, label in stored),
        wanted={key: row.label for key, row in wanted.items()},
        field="label",
        columns=("judge_id", "response_id", "nugget_id", "label", "condition"),
        build=lambda key, label: (judge.pk, key[0], key[1], label, condition),
    )
    if stale:
        written.removed, _ = NuggetAssignment.objects.filter(pk__in=stale).delete()
    return written
