"""A collection's judges: who each is, what it labelled there, how much of each pool it graded, and how far
it agrees with a reference judge on the relevance pairs they share.

Judges are not a collection's own (one LLM or one assessor labels several), so the judges of a collection
are those with labels in it. Every figure comes from one grouped query per kind of row (a task's labels,
machine jobs, crowd campaigns, pools, pool coverage, the agreement's confusion counts), so the page costs
the same number of queries whatever the judges, labels and pools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

import numpy as np
from django.db.models import Count, F, Max, Min, OuterRef, Subquery

from annotation.families import label_task
from annotation.models import (
    Collection,
    Judge,
    Pool,
    RelevanceGrade,
    RelevanceJudgment,
)
from crowd.models import CrowdCampaign
from judging.measures.agreement import disagreement_weights, kappa_from_confusion
from judging.models import JudgeJob


@dataclass(frozen=True)
class LabelColumn:
    """A label task the page counts (its rows and their way to the collection are the family's
    declaration, `annotation.families`), under the page's short title."""

    key: str
    label: str


LABEL_TASKS = (
    LabelColumn("relevance", "Relevance"),
    LabelColumn("ptkb", "PTKB"),
    LabelColumn("nuggets", "Nuggets"),
    LabelColumn("ntr", "NtR"),
    LabelColumn("ntn", "NtN"),
    LabelColumn("support", "Support"),
    LabelColumn("nugget-importance", "RAG nugget importance"),
    LabelColumn("nugget-assignment", "RAG nugget assignment"),
)
GRADES = [grade.value for grade in RelevanceGrade]


@dataclass
class MachineJobs:
    """What a machine judge's jobs on the collection recorded."""

    jobs: int = 0
    models: list[str] = field(default_factory=list)
    prompt_versions: list[str] = field(default_factory=list)
    cost_usd: Decimal = Decimal(0)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class PoolCoverage:
    pool: str
    depth: int
    size: int
    graded: int

    @property
    def share(self) -> float | None:
        return self.graded / self.size if self.size else None


@dataclass(frozen=True)
class Agreement:
    """A judge's relevance grades against the reference judge's on the pairs both graded."""

    n: int
    exact: float | None
    kappa: float | None
    weighted_kappa: float | None


@dataclass
class JudgeRow:
    judge: Judge
    labels: dict[str, int]
    first_label: datetime | None
    last_label: datetime | None
    jobs: MachineJobs | None = None
    campaigns: list[str] = field(default_factory=list)
    coverage: list[PoolCoverage] = field(default_factory=list)
    agreement: Agreement | None = None

    @property
    def total(self) -> int:
        return sum(self.labels.values())

    @property
    def cells(self) -> list[int]:
        """Its label counts in the order of LABEL_TASKS."""
        return [self.labels.get(task.key, 0) for task in LABEL_TASKS]


def _label_counts(collection: Collection) -> dict[int, dict[str, tuple[int, datetime, datetime]]]:
    counts: dict[int, dict[str, tuple[int, datetime, datetime]]] = {}
    for task in LABEL_TASKS:
        declared = label_task(task.key)
        rows = (
            declared.model._default_manager.filter(**{declared.collection: collection})
            .values("judge_id")
            .annotate(n=Count("id"), first=Min("created_at"), last=Max("updated_at"))
            .order_by()
        )
        for row in rows:
            counts.setdefault(row["judge_id"], {})[task.key] = (row["n"], row["first"], row["last"])
    return counts


def _machine_jobs(collection: Collection, judge_ids: list[int]) -> dict[int, MachineJobs]:
    jobs: dict[int, MachineJobs] = {}
    rows = JudgeJob.objects.filter(collection=collection, judge_id__in=judge_ids).values_list(
        "judge_id", "model", "prompt_version", "cost_usd", "calls_made", "input_tokens", "output_tokens"
    )
    for judge_id, model, prompt_version, cost, calls, input_tokens, output_tokens in rows.order_by("id"):
        summary = jobs.setdefault(judge_id, MachineJobs())
        summary.jobs += 1
        if model and model not in summary.models:
            summary.models.append(model)
        if prompt_version and prompt_version not in summary.prompt_versions:
            summary.prompt_versions.append(prompt_version)
        summary.cost_usd += cost
        summary.calls += calls
        summary.input_tokens += input_tokens
        summary.output_tokens += output_tokens
    return jobs


def _campaigns(collection: Collection, judge_ids: list[int]) -> dict[int, list[str]]:
    campaigns: dict[int, list[str]] = {}
    rows = CrowdCampaign.objects.filter(collection=collection, label_judge_id__in=judge_ids).values_list(
        "label_judge_id", "name"
    )
    for judge_id, name in rows.order_by("name"):
        campaigns.setdefault(judge_id, []).append(name)
    return campaigns


@dataclass(frozen=True)
class PoolSize:
    id: int
    name: str
    depth: int
    size: int


def collection_pools(*, collection: Collection) -> list[PoolSize]:
    rows = (
        Pool.objects.filter(collection=collection)
        .values_list("pk", "name", "depth", "pair_count")
        .order_by("name")
    )
    return [PoolSize(*row) for row in rows]


def _coverage(collection: Collection) -> dict[tuple[int, int], int]:
    """(pool id, judge id): the pool's pairs the judge graded."""
    rows = (
        RelevanceJudgment.objects.filter(
            turn__collection=collection, turn__pool_entries__passage_id=F("passage_id")
        )
        .values("turn__pool_entries__pool_id", "judge_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {(row["turn__pool_entries__pool_id"], row["judge_id"]): row["n"] for row in rows}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def reference_agreement(*, collection: Collection, reference_id: int) -> dict[int, Agreement]:
    """Per judge, its agreement with the reference judge on the relevance pairs both graded: exact agreement,
    Cohen's kappa and the linearly weighted kappa, from one query of confusion counts."""
    reference_grade = RelevanceJudgment.objects.filter(
        judge_id=reference_id, turn_id=OuterRef("turn_id"), passage_id=OuterRef("passage_id")
    ).values("grade")[:1]
    rows = (
        RelevanceJudgment.objects.filter(turn__collection=collection)
        .exclude(judge_id=reference_id)
        .annotate(reference_grade=Subquery(reference_grade))
        .filter(reference_grade__isnull=False)
        .values("judge_id", "grade", "reference_grade")
        .annotate(n=Count("id"))
        .order_by()
    )
    k = len(GRADES)
    confusions: dict[int, np.ndarray] = {}
    for row in rows:
        matrix = confusions.setdefault(row["judge_id"], np.zeros((k, k), dtype=np.int64))
        matrix[GRADES.index(row["grade"]), GRADES.index(row["reference_grade"])] += row["n"]
    if not confusions:
        return {}
    judge_ids = list(confusions)
    stack = np.stack([confusions[j] for j in judge_ids])
    kappas = kappa_from_confusion(stack, disagreement_weights(k, "none"))
    weighted = kappa_from_confusion(stack, disagreement_weights(k, "linear"))
    result: dict[int, Agreement] = {}
    for index, judge_id in enumerate(judge_ids):
        n = int(stack[index].sum())
        result[judge_id] = Agreement(
            n=n,
            exact=float(np.trace(stack[index])) / n if n else None,
            kappa=_finite(kappas[index]),
            weighted_kappa=_finite(weighted[index]),
        )
    return result


def collection_judges(*, collection: Collection, reference_id: int | None = None) -> list[JudgeRow]:
    """Every judge with labels in `collection`, by name, with its provenance, labels per task, coverage of
    each pool and (given `reference_id`) its relevance agreement with that judge."""
    counts = _label_counts(collection)
    judge_ids = list(counts)
    judges = Judge.objects.filter(pk__in=judge_ids).select_related("user").order_by("name")
    jobs = _machine_jobs(collection, judge_ids)
    campaigns = _campaigns(collection, judge_ids)
    pools = collection_pools(collection=collection)
    coverage = _coverage(collection) if pools else {}
    agreement = reference_agreement(collection=collection, reference_id=reference_id) if reference_id else {}
    rows = []
    for judge in judges:
        own = counts[judge.pk]
        rows.append(
            JudgeRow(
                judge=judge,
                labels={task: n for task, (n, _first, _last) in own.items()},
                first_label=min(first for _n, first, _last in own.values()),
                last_label=max(last for _n, _first, last in own.values()),
                jobs=jobs.get(judge.pk),
                campaigns=campaigns.get(judge.pk, []),
                coverage=[
                    PoolCoverage(pool.name, pool.depth, pool.size, coverage.get((pool.id, judge.pk), 0))
                    for pool in pools
                ],
                agreement=agreement.get(judge.pk),
            )
        )
    return rows
