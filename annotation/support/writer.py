"""The writers of support labels: (answer sentence, cited passage) -> Full / Partial / No support."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from annotation.labels.writer import JudgmentRefused, Written, labelled_submit, labels_restate
from annotation.models import Collection, Judge, ResponseSentence, SupportJudgment, SupportLabel

SUPPORT_LABELS = frozenset(SupportLabel.values)


def _support_label_check(label: str) -> None:
    if label not in SUPPORT_LABELS:
        raise JudgmentRefused(f"label must be one of {', '.join(SupportLabel.values)}, not {label!r}")


@transaction.atomic
def support_judgment_submit(
    *,
    judge: Judge,
    sentence: ResponseSentence,
    citation_index: int,
    label: str,
    condition: str,
    shown_label: str = "",
    time_spent_ms: int | None = None,
) -> SupportJudgment:
    """Record or revise the judge's support label of (sentence, its `citation_index`-th citation).

    A judge labels a unit in one condition only. `shown_label` is the label the judge was shown to
    post-edit (kept from the first submit); `changed` says whether the judge moved away from it.
    """
    _support_label_check(label)
    if not 0 <= citation_index < len(sentence.citations):
        raise JudgmentRefused(f"the sentence has no citation {citation_index}")
    return labelled_submit(
        SupportJudgment,
        unit={"judge": judge, "sentence": sentence, "citation_index": citation_index},
        field="label",
        label=label,
        condition=condition,
        shown_label=shown_label,
        time_spent_ms=time_spent_ms,
        create_only={"passage_id": sentence.citations[citation_index]},
    )


@dataclass(frozen=True)
class SupportRow:
    sentence_id: int
    citation_index: int
    passage_id: str
    label: str


# Units written per round (labels_restate's model instances, the sentence ids a query names).
_BLOCK = 10_000


@transaction.atomic
def support_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Iterable[SupportRow], condition: str
) -> Written:
    """Make the judge's support labels of the given units of `collection` say what `rows` say (a label
    file of a run set: tens of thousands of units in a handful of queries)."""
    wanted = {(r.sentence_id, r.citation_index): r for r in rows}
    for row in wanted.values():
        _support_label_check(row.label)
    written = Written()
    keys = list(wanted)
    # A block of units at a time, each against the stored labels of its own sentences: a file of a million
    # labels never has a model instance of each in memory, nor reads every stored label per block.
    for start in range(0, len(keys), _BLOCK):
        block = keys[start : start + _BLOCK]
        stored = SupportJudgment.objects.filter(
            judge=judge,
            sentence__response__run__collection=collection,
            sentence_id__in={sid for sid, _ in block},
        )
        done = labels_restate(
            SupportJudgment,
            stored=(
                (pk, (sid, ci), label)
                for pk, sid, ci, label in stored.values_list("id", "sentence_id", "citation_index", "label")
            ),
            wanted={key: wanted[key].label for key in block},
            field="label",
            build=lambda key, label: SupportJudgment(
                judge=judge,
                sentence_id=key[0],
                citation_index=key[1],
                passage_id=wanted[key].passage_id,
                label=label,
                condition=condition,
            ),
        )
        written.created += done.created
        written.updated += done.updated
        written.unchanged += done.unchanged
    return written
