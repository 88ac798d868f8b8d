"""The blind re-assessment of human-LLM support disagreements."""

from __future__ import annotations

import random
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from sklearn.metrics import cohen_kappa_score

from annotation.models import (
    Collection,
    Judge,
    SupportAssignment,
    SupportJudgment,
    Topic,
)
from annotation.support.services import HUMAN_CONDITIONS, LABELS, SupportConflict, _assessor_labels_in_topic

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
    assessor: AbstractBaseUser,
    k: int = 15,
    seed: int = 0,
) -> list[SupportAssignment]:
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
        current = SupportAssignment.objects.select_for_update().filter(topic=topic, user=assessor).first()
        if current is not None and current.condition != SupportAssignment.Condition.BLIND:
            raise SupportConflict(
                f"{assessor.get_username()} judges topic {topic.number} in condition {current.condition}; "
                "an assessor never sees the same unit in both conditions"
            )
        if (
            _assessor_labels_in_topic(assessor, topic)
            .exclude(condition=SupportJudgment.Condition.BLIND)
            .exists()
        ):
            raise SupportConflict(f"{assessor.get_username()} already judged units of topic {topic.number}")
        if current is None:
            current = SupportAssignment.objects.create(
                topic=topic, user=assessor, condition=SupportAssignment.Condition.BLIND, units=units
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


@dataclass
class SideAgreement:
    agree: int = 0
    kappa: float | None = None

    def as_dict(self, n: int) -> dict[str, Any]:
        return {"agree": self.agree, "rate": (self.agree / n) if n else None, "kappa": self.kappa}


@dataclass
class DisagreementReport:
    condition: str
    units: int = 0
    human: SideAgreement = field(default_factory=SideAgreement)
    machine: SideAgreement = field(default_factory=SideAgreement)
    neither: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "agrees_with_human": self.human.as_dict(self.units),
            "agrees_with_machine": self.machine.as_dict(self.units),
            "agrees_with_neither": self.neither,
        }


def _kappa(a: list[str], b: list[str]) -> float | None:
    if not a:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one shared label: kappa is undefined, reported as None below
        value = cohen_kappa_score(a, b, labels=LABELS)
    # Identical constant labels make kappa 0/0; sklearn returns nan, which JSON cannot carry.
    return None if value != value else float(value)


def support_disagreement_report(
    *, collection: Collection, human_judges: list[Judge], machine_judge: Judge, blind_judge: Judge
) -> dict[str, DisagreementReport]:
    """How often, and with what Cohen's kappa, the blind assessor sides with the human or the machine,
    per human condition (scratch, post-edit) and over all."""
    blind = {
        (sid, ci): label
        for sid, ci, label in SupportJudgment.objects.filter(
            judge=blind_judge, condition=SupportJudgment.Condition.BLIND
        ).values_list("sentence_id", "citation_index", "label")
    }
    triples: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for items in support_disagreements(
        collection=collection, human_judges=human_judges, machine_judge=machine_judge
    ).values():
        for d in items:
            label = blind.get((d.sentence_id, d.citation_index))
            if label is not None:
                triples[d.human_condition].append((label, d.human_label, d.machine_label))
                triples["all"].append((label, d.human_label, d.machine_label))
    reports: dict[str, DisagreementReport] = {}
    for condition in [c.value for c in HUMAN_CONDITIONS] + ["all"]:
        rows = triples.get(condition, [])
        report = DisagreementReport(condition=condition, units=len(rows))
        report.human.agree = sum(1 for b, h, _m in rows if b == h)
        report.machine.agree = sum(1 for b, _h, m in rows if b == m)
        report.neither = sum(1 for b, h, m in rows if b != h and b != m)
        report.human.kappa = _kappa([r[0] for r in rows], [r[1] for r in rows])
        report.machine.kappa = _kappa([r[0] for r in rows], [r[2] for r in rows])
        reports[condition] = report
    return reports
