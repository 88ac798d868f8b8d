"""The writer of PTKB statement labels: one submit for the assessor's PTKB step, and a bulk upsert for
PTKB qrels files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from annotation.labels.writer import JudgmentRefused, Written
from annotation.models import Collection, Judge, PtkbJudgment, PtkbStatement, Turn


@transaction.atomic
def ptkb_judgments_submit(
    *, judge: Judge, turn: Turn, answers: dict[int, bool], time_spent_ms: int | None = None
) -> list[PtkbJudgment]:
    """Record or revise a judge's relevant / not relevant answer for each PTKB statement of the turn.

    `answers` maps statement pks of the turn's conversation to the answer; time spent on the step is
    shared out evenly over its statements and adds up over revisions.
    """
    statements = {s.pk: s for s in PtkbStatement.objects.filter(topic_id=turn.topic_id, pk__in=list(answers))}
    unknown = set(answers) - set(statements)
    if unknown:
        raise JudgmentRefused(f"statements {sorted(unknown)} are not in the PTKB of turn {turn.turn_id}")
    share = None if time_spent_ms is None or not answers else time_spent_ms // len(answers)
    results: list[PtkbJudgment] = []
    for pk, relevant in answers.items():
        judgment, created = PtkbJudgment.objects.select_for_update().get_or_create(
            judge=judge,
            turn=turn,
            statement=statements[pk],
            defaults={"relevant": relevant, "time_spent_ms": share},
        )
        if not created:
            judgment.relevant = relevant
            if share is not None:
                judgment.time_spent_ms = (judgment.time_spent_ms or 0) + share
            judgment.save(update_fields=["relevant", "time_spent_ms", "updated_at"])
        results.append(judgment)
    return results


# --- Bulk PTKB labels (PTKB qrels files) ----------------------------------------------------------


@dataclass(frozen=True)
class PtkbRow:
    turn_id: int
    statement_id: int
    relevant: bool


@transaction.atomic
def ptkb_judgments_upsert(
    *, judge: Judge, collection: Collection, rows: Sequence[PtkbRow], replace: bool = False
) -> Written:
    """Make the judge's PTKB labels on `collection` say what `rows` say (a PTKB qrels file); with
    `replace`, its labels the rows do not hold are removed. Idempotent, like the relevance upsert."""
    written = Written()
    stored = {
        (turn_id, statement_id): (pk, relevant)
        for pk, turn_id, statement_id, relevant in PtkbJudgment.objects.filter(
            judge=judge, turn__collection=collection
        ).values_list("id", "turn_id", "statement_id", "relevant")
    }
    created: list[PtkbJudgment] = []
    changed: list[PtkbJudgment] = []
    for row in rows:
        current = stored.get((row.turn_id, row.statement_id))
        if current is None:
            created.append(
                PtkbJudgment(
                    judge=judge, turn_id=row.turn_id, statement_id=row.statement_id, relevant=row.relevant
                )
            )
        elif current[1] != row.relevant:
            changed.append(PtkbJudgment(id=current[0], relevant=row.relevant))
        else:
            written.unchanged += 1
    PtkbJudgment.objects.bulk_create(created)
    PtkbJudgment.objects.bulk_update(changed, ["relevant"])
    written.created, written.updated = len(created), len(changed)
    if replace:
        kept = {(row.turn_id, row.statement_id) for row in rows}
        stale = [pk for key, (pk, _relevant) in stored.items() if key not in kept]
        PtkbJudgment.objects.filter(id__in=stale).delete()
        written.removed = len(stale)
    return written
