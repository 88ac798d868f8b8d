"""Reads for the hybrid pages: the human samples of a collection and how far people have labelled them."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef
from django.http import QueryDict

from annotation.models import Assignment, Judge, PoolEntry, RelevanceJudgment
from judging.models import BudgetSimulation, HumanSample

SAMPLES_SHOWN = 10


@dataclass(frozen=True)
class SampleProgress:
    """A relevance sample by turn, the assessors' judges that label it, and how many drawn turns they
    labelled in full (every pooled pair graded); `query` opens the estimate page with the sample and those judges chosen."""

    sample: HumanSample
    drawn: int
    labelled: int
    human_judges: list[str]
    query: str

    @property
    def complete(self) -> bool:
        return self.drawn > 0 and self.labelled == self.drawn


def _turns_labelled(assignment: Assignment | None, turns: set[str], judge_ids: list[int]) -> set[str]:
    """The drawn turns whose every pooled pair one of the assessors has graded: a turn with some of its
    passages graded is not labelled yet (the estimate needs the turn's measure from people in full)."""
    if assignment is None or not judge_ids:
        return set()
    graded = RelevanceJudgment.objects.filter(
        judge_id__in=judge_ids, turn_id=OuterRef("turn_id"), passage_id=OuterRef("passage_id")
    )
    missing: set[str] = set()
    seen: set[str] = set()
    for turn_id, done in (
        PoolEntry.objects.filter(pool_id=assignment.pool_id, turn__turn_id__in=turns)
        .annotate(done=Exists(graded))
        .values_list("turn__turn_id", "done")
    ):
        seen.add(turn_id)
        if not done:
            missing.add(turn_id)
    return seen - missing


def samples_progress(*, collection_id: int) -> list[SampleProgress]:
    """The newest relevance samples by turn of a collection, each with its labelling progress."""
    samples = list(
        HumanSample.objects.filter(collection_id=collection_id, task="relevance", unit="turn").select_related(
            "machine_judge"
        )[:SAMPLES_SHOWN]
    )
    rows = []
    for sample in samples:
        turns = set(sample.units.values_list("key", flat=True))
        # The work of a sample drawn from the browser or by sample_for_humans is the assignment of its name.
        assignment = Assignment.objects.filter(name=sample.name, pool__collection_id=collection_id).first()
        assessors = assignment.assessors.all() if assignment is not None else []
        judges = list(Judge.objects.filter(user__in=assessors).order_by("name").values_list("id", "name"))
        labelled = _turns_labelled(assignment, turns, [j for j, _n in judges])
        query = QueryDict(mutable=True)
        query.update(
            {
                "task": "relevance",
                "measure": sample.measure,
                "machine_judge": sample.machine_judge.name,
                "sample": sample.name,
            }
        )
        query.setlist("human_judge", [n for _j, n in judges])
        rows.append(
            SampleProgress(
                sample=sample,
                drawn=len(turns),
                labelled=len(labelled),
                human_judges=[n for _j, n in judges],
                query=query.urlencode(),
            )
        )
    return rows


RECENT_SIMULATIONS = 10


def simulations_recent(*, collection_id: int) -> list[BudgetSimulation]:
    """The collection's latest budget simulations, newest first, with who asked."""
    rows = BudgetSimulation.objects.filter(collection_id=collection_id).select_related("created_by")
    return list(rows[:RECENT_SIMULATIONS])
