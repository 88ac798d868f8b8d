"""Drawing a human sample from the estimates page: the same draw as `sample_for_humans`, handed to the
chosen assessors as a relevance assignment, organisers only, and the estimate that names the sample is
valid once the assessors have labelled it."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Assignment, PoolEntry, RelevanceJudgment
from annotation.relevance.pooling import pool_build
from annotation.services import judge_for_assessor
from judging.measures.hybrid.estimate import UNSAMPLED_NOTE
from judging.models import HumanSample
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)
from tests.judging.helpers import report_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    """Two runs over 12 turns, a machine judge that labelled every pooled pair, a pool of the top 3."""
    collection = CollectionFactory(name="draw")
    machine = JudgeFactory(name="llm")
    runs = [RunFactory(collection=collection, name=n) for n in ("run-a", "run-b")]
    rows = []
    for t in range(12):
        turn = TurnFactory(topic=TopicFactory(collection=collection, number=str(t + 1)), position=1)
        for p in range(3):
            rows.append(
                RelevanceJudgment(judge=machine, turn=turn, passage_id=f"d{t}{p}", grade=(t + 2 * p) % 5)
            )
        for i, run in enumerate(runs):
            ids = [f"d{t}{p}" for p in (range(3) if i else range(2, -1, -1))]
            RankingFactory(run=run, turn=turn, passage_ids=ids, scores=[3, 2, 1])
    RelevanceJudgment.objects.bulk_create(rows)
    pool_build(collection=collection, name="top3", depth=3)
    return collection


def _post(**changes):
    data = {
        "draw-name": "pilot",
        "draw-pool": "top3",
        "draw-machine_judge": "llm",
        "draw-budget": "4",
        "draw-strategy": "uniform",
        "draw-seed": "7",
        "draw-assessors": [UserFactory(username="ann").pk],
    }
    data.update(changes)
    return data


def _url(collection):
    return reverse("judging:hybrid-sample", args=[collection.name])


def test_it_draws_the_sample_the_command_draws_and_assigns_it(client, collection):
    client.force_login(OrganiserFactory())

    response = client.post(_url(collection), _post())

    assert response.status_code == 302
    assert response["Location"] == reverse("judging:hybrid-estimate", args=["draw"]) + "?sample=pilot"
    sample = HumanSample.objects.get(collection=collection, name="pilot")
    assert (sample.task, sample.unit, sample.strategy, sample.population) == (
        "relevance",
        "turn",
        "uniform",
        12,
    )
    drawn = sorted(sample.units.values_list("key", flat=True))
    assert len(drawn) == 4
    assert set(sample.units.values_list("inclusion_probability", flat=True)) == {4 / 12}
    assignment = Assignment.objects.get(name="pilot")
    assert [u.username for u in assignment.assessors.all()] == ["ann"]
    assert sorted(t for unit in assignment.units.all() for t in unit.label.split()) == drawn
    call_command(
        "sample_for_humans",
        *("--collection", "draw", "--task", "relevance", "--machine-judge", "llm", "--budget", "4"),
        *("--seed", "7", "--name", "by-command", "--no-work"),
        stdout=StringIO(),
    )
    by_command = HumanSample.objects.get(name="by-command")
    assert sorted(by_command.units.values_list("key", flat=True)) == drawn


def test_it_draws_an_uncertainty_sample_without_confidence_judges_from_the_machines_own_values(
    client, collection
):
    client.force_login(OrganiserFactory())

    response = client.post(_url(collection), _post(**{"draw-strategy": "uncertainty"}))

    assert response.status_code == 302
    sample = HumanSample.objects.get(collection=collection, name="pilot")
    assert sample.strategy == "uncertainty"
    probabilities = list(sample.units.values_list("inclusion_probability", flat=True))
    assert all(0 < p <= 1 for p in probabilities)
    assert len(set(probabilities)) > 1  # not the uniform 4/12: the machine's values weigh the turns


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"draw-budget": "13"}, "the budget must lie between 1 and the 12 units, not 13"),
        ({"draw-assessors": []}, "This field is required."),
        ({"draw-name": "has space"}, "Enter a valid “slug”"),
        ({"draw-pool": "nope"}, "Select a valid choice."),
    ],
)
def test_it_refuses_a_draw_it_cannot_make_and_says_why(client, collection, changes, reason):
    client.force_login(OrganiserFactory())

    response = client.post(_url(collection), _post(**changes))

    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not HumanSample.objects.exists()
    assert not Assignment.objects.exists()


def test_it_refuses_assessors_and_draws_nothing(client, collection):
    client.force_login(UserFactory(username="bob"))

    response = client.post(_url(collection), _post())

    assert response.status_code == 403
    assert not HumanSample.objects.exists()


def test_the_estimate_is_valid_once_the_assessors_have_labelled_the_sample(client, collection):
    client.force_login(OrganiserFactory())
    client.post(_url(collection), _post())
    sample = HumanSample.objects.get(name="pilot")
    judge = judge_for_assessor(user=Assignment.objects.get(name="pilot").assessors.get())
    drawn = sorted(sample.units.values_list("key", flat=True))

    def label(turn_ids):
        for entry in PoolEntry.objects.filter(pool__name="top3", turn__turn_id__in=turn_ids).select_related(
            "turn"
        ):
            RelevanceJudgment.objects.get_or_create(
                judge=judge, turn=entry.turn, passage_id=entry.passage_id, defaults={"grade": 2}
            )

    label(drawn[:2])
    page = reverse("judging:hybrid-estimate", args=["draw"])
    partial = client.get(page)
    row = next(p for p in partial.context["samples"] if p.sample == sample)
    assert (row.labelled, row.drawn, row.human_judges) == (2, 4, ["assessor:ann"])
    halfway = report_page(client, f"{page}?{row.query}")
    assert halfway.status_code == 200
    assert "2 drawn units per run have no human label yet" in halfway.content.decode()

    label(drawn[2:])
    # The labels written since make the stored estimate stale: this view queues it again.
    stale = client.get(f"{page}?{row.query}")
    assert not stale.context["report"].done
    assert 'id="report-earlier"' in stale.content.decode()
    done = report_page(client, f"{page}?{row.query}")

    assert done.status_code == 200
    body = done.content.decode()
    assert "sample pilot: uniform, fixed size, 4 units drawn" in body
    assert "no human label yet" not in body
    assert "not valid" not in body
    assert UNSAMPLED_NOTE not in done.context["result"].notes
    assert set(done.context["result"].runs) == {"run-a", "run-b"}
    assert "4 of 4" in body


def test_a_drawn_turn_with_only_some_passages_graded_is_not_labelled(client, collection):
    client.force_login(OrganiserFactory())
    client.post(_url(collection), _post())
    sample = HumanSample.objects.get(name="pilot")
    judge = judge_for_assessor(user=Assignment.objects.get(name="pilot").assessors.get())
    first = sorted(sample.units.values_list("key", flat=True))[0]
    entry = PoolEntry.objects.filter(pool__name="top3", turn__turn_id=first).select_related("turn").first()
    RelevanceJudgment.objects.create(judge=judge, turn=entry.turn, passage_id=entry.passage_id, grade=2)

    page = client.get(reverse("judging:hybrid-estimate", args=["draw"]))
    row = next(p for p in page.context["samples"] if p.sample == sample)
    assert (row.labelled, row.drawn) == (0, 4)
