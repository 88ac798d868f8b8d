"""The writers of support labels: (answer sentence, cited passage) -> Full / Partial / No support."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from annotation.judgments.base import JudgmentRefused, Written, time_added
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
    judgment = (
        SupportJudgment.objects.select_for_update()
        .filter(judge=judge, sentence=sentence, citation_index=citation_index)
        .first()
    )
    if judgment is None:
        return SupportJudgment.objects.create(
            judge=judge,
            sentence=sentence,
            citation_index=citation_index,
            passage_id=sentence.citations[citation_index],
            label=label,
            condition=condition,
            shown_label=shown_label,
            changed=(label != shown_label) if shown_label else None,
            time_spent_ms=time_spent_ms,
        )
    if judgment.condition != condition:
        raise JudgmentRefused(
            f"this unit was judged in condition {judgment.condition}; a judge never judges a unit in two conditions"
        )
    judgment.label = label
    judgment.changed = (label != judgment.shown_label) if judgment.shown_label else None
    judgment.time_spent_ms = time_added(judgment.time_spent_ms, time_spent_ms)
    judgment.save(update_fields=["label", "changed", "time_spent_ms", "updated_at"])
    return judgment


@dataclass(frozen=True)
class SupportRow:
    sentence_id: int
    citation_index: int
    passage_id: str
    label: str


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
    if not wanted:
        return written
    stored = {
        (sid, ci): (pk, label)
        for pk, sid, ci, label in SupportJudgment.objects.filter(
            judge=judge, sentence__response__run__collection=collection
        ).values_list("id", "sentence_id", "citation_index", "label")
    }
    created: list[SupportJudgment] = []
    changed: list[SupportJudgment] = []
    now = timezone.now()
    for key, row in wanted.items():
        current = stored.get(key)
        if current is None:
            created.append(
                SupportJudgment(
                    judge=judge,
                    sentence_id=row.sentence_id,
                    citation_index=row.citation_index,
                    passage_id=row.passage_id,
                    label=row.label,
                    condition=condition,
                )
            )
        elif current[1] != row.label:
            changed.append(SupportJudgment(id=current[0], label=row.label, updated_at=now))
        else:
            written.unchanged += 1
    SupportJudgment.objects.bulk_create(created, batch_size=2000)
    SupportJudgment.objects.bulk_update(changed, ["label", "updated_at"], batch_size=2000)
    written.created, written.updated = len(created), len(changed)
    return written
