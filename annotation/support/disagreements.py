"""The blind re-assessment of human-LLM support disagreements: which units disagree, and handing a
seeded sample of them to an independent assessor. How the assessor sides is a comparison:
judging.support.metrics.support_disagreement_report."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import (
    Collection,
    Condition,
    Judge,
    SupportJudgment,
    Topic,
    TopicWork,
)
from annotation.support.services import HUMAN_CONDITIONS, SupportConflict, assessor_labels_in_topic

# --- Disagreement study ----------------------------------------------------------------------------


@dataclass
class Disagreement:
    sentence_id: int
    citation_index: int
    human_label: str
    machine_label: str
    human_condition: str


def support_disagreements(
    *, collection: Collection, human_judges: list[Judge], machine_judge: Judge
) -> dict[Topic, list[Disagreement]]:
    """Units where a human (scratch or post-edit) and the machine judge gave different labels, per topic."""
    machine = {
        (sid, ci): label
        for sid, ci, label in SupportJudgment.objects.filter(
            judge=machine_judge, sentence__response__run__collection=collection
        ).values_list("sentence_id", "citation_index", "label")
    }
    found: dict[int, list[Disagreement]] = defaultdict(list)
    seen: set[tuple[int, int]] = set()
    rows = (
        SupportJudgment.objects.filter(
            judge__in=human_judges,
            condition__in=HUMAN_CONDITIONS,
            sentence__response__run__collection=collection,
        )
        .order_by("sentence_id", "citation_index", "judge__name")
        .values_list(
            "sentence__response__turn__topic_id", "sentence_id", "citation_index", "label", "condition"
        )
    )
    for topic_id, sid, ci, label, condition in rows:
        other = machine.get((sid, ci))
        if other is None or other == label or (sid, ci) in seen:
            continue
        seen.add((sid, ci))
        found[topic_id].append(Disagreement(sid, ci, label, other, condition))
    topics = Topic.objects.in_bulk(list(found))
    return {topics[tid]: items for tid, items in sorted(found.items())}


@transaction.atomic
def support_disagreements_assign(
    *,
    collection: Collection,
    human_judges: list[Judge],
    machine_judge: Judge,
    assessor: User,
    k: int = 15,
    seed: int = 0,
) -> list[TopicWork]:
    """Sample up to k disagreements per topic (seeded) and assign them blind to an independent assessor.

    The assessor must be none of the human judges and must not already meet the topic in another
    condition; re-sampling a topic replaces the blind units not yet labelled.
    """
    if k < 1:
        raise SupportConflict("k must be at least 1")
    assessor_judge = Judge.objects.filter(user=assessor).first()
    if assessor_judge is not None and assessor_judge in human_judges:
        raise SupportConflict(f"{assessor.get_username()} is one of the human judges, so not independent")
    rng = random.Random(seed)
    assignments = []
    for topic, items in support_disagreements(
        collection=collection, human_judges=human_judges, machine_judge=machine_judge
    ).items():
        sample = rng.sample(items, min(k, len(items)))
        units = [[d.sentence_id, d.citation_index] for d in sample]
        current = (
            TopicWork.objects.select_for_update()
            .filter(kind=TopicWork.Kind.SUPPORT, topic=topic, user=assessor)
            .first()
        )
        if current is not None and current.condition != Condition.BLIND:
            raise SupportConflict(
                f"{assessor.get_username()} judges topic {topic.number} in condition {current.condition}; "
                "an assessor never sees the same unit in both conditions"
            )
        if assessor_labels_in_topic(assessor, topic).exclude(condition=Condition.BLIND).exists():
            raise SupportConflict(f"{assessor.get_username()} already judged units of topic {topic.number}")
        if current is None:
            current = TopicWork.objects.create(
                kind=TopicWork.Kind.SUPPORT,
                topic=topic,
                user=assessor,
                condition=Condition.BLIND,
                units=units,
            )
        else:
            done = [
                [sid, ci]
                for sid, ci in current.units
                if SupportJudgment.objects.filter(
                    judge__user=assessor, sentence_id=sid, citation_index=ci
                ).exists()
            ]
            current.units = done + [u for u in units if u not in done]
            current.save(update_fields=["units"])
        assignments.append(current)
    return assignments
