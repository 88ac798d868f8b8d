"""Aggregating again after more workers answered: the majority label follows the votes, in place."""

from __future__ import annotations

import pytest

from annotation.models import NtrJudgment
from crowd.aggregation.services import labels_aggregate
from crowd.answers.services import assignment_submit, worker_get_or_create
from tests.crowd.crowd_helpers import build_campaign

pytestmark = pytest.mark.django_db


def _submit(batch, worker: str, vote: bool) -> None:
    items = list(batch.items.select_related("test_question"))
    assignment_submit(
        batch=batch,
        worker=worker_get_or_create(worker_id=worker),
        answers={i.position: i.test_question.answer if i.is_test else vote for i in items},
    )


def _labels(campaign, batch) -> dict[tuple[int, int], tuple[int, bool]]:
    pairs = {(i.response_id, i.nugget_id) for i in batch.items.filter(test_question__isnull=True)}
    return {
        (j.response_id, j.nugget_id): (j.id, j.matched)
        for j in NtrJudgment.objects.filter(judge=campaign.label_judge)
        if (j.response_id, j.nugget_id) in pairs
    }


def test_a_later_majority_flips_the_label_in_place_and_a_tie_removes_it():
    campaign = build_campaign(assignments=5)
    flip, tie = campaign.batches.order_by("index")
    for batch in (flip, tie):
        _submit(batch, "WA", True)
        _submit(batch, "WB", True)
    first = labels_aggregate(campaign=campaign)
    assert first.labelled == 10 and first.yes == 10
    before = _labels(campaign, flip)
    assert {matched for _, matched in before.values()} == {True}

    for worker in ("WC", "WD", "WE"):
        _submit(flip, worker, False)  # 2 yes against 3 no
    _submit(tie, "WC", False)
    _submit(tie, "WD", False)  # 2 yes against 2 no
    second = labels_aggregate(campaign=campaign)

    after = _labels(campaign, flip)
    assert {key: (label_id, False) for key, (label_id, _) in before.items()} == after
    assert _labels(campaign, tie) == {}
    assert (second.labelled, second.yes, second.no) == (5, 0, 5)
    assert sorted(i.id for i in second.unresolved) == sorted(
        tie.items.filter(test_question__isnull=True).values_list("id", flat=True)
    )
    assert all(i.batch.index == tie.index and i.nugget.key for i in second.unresolved)
