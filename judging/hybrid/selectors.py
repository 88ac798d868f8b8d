"""Reads for the hybrid pages: the human samples of a collection and how far people have labelled them."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import QueryDict

from annotation.models import Assignment, Judge, RelevanceJudgment
from judging.models import HumanSample

SAMPLES_SHOWN = 10


@dataclass(frozen=True)
class SampleProgress:
    """A relevance sample by turn, the assessors' judges that label it, and how many drawn turns they
    labelled; `query` opens the estimate page with the sample and those judges chosen."""

    sample: HumanSample
    drawn: int
    labelled: int
    human_judges: list[str]
    query: str

    @property
    def complete(self) -> bool:
        return self.drawn > 0 and self.labelled == self.drawn


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
        assessors = Assignment.objects.filter(name=sample.name, pool__collection_id=collection_id).values(
            "assessors"
        )
        judges = list(Judge.objects.filter(user__in=assessors).order_by("name").values_list("id", "name"))
        labelled = set(
            RelevanceJudgment.objects.filter(
                judge_id__in=[j for j, _n in judges],
                turn__collection_id=collection_id,
                turn__turn_id__in=turns,
            ).values_list("turn__turn_id", flat=True)
        )
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
