"""The console's pool pages say what the adaptive filter did: the saving counts only pairs it graded, and
the turns it could not filter are named."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Judge, Pool, PoolEntry
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]


@pytest.fixture
def organiser(client):
    user = OrganiserFactory()
    client.force_login(user)
    return user


def _campaign(turns: int):
    """`turns` turns ranked d1..d6 by one run; the filter judge graded turn 1's d4 relevant, d5 and d6 not,
    and no other turn."""
    collection = CollectionFactory(name="camp")
    topic = TopicFactory(collection=collection, number="1")
    run = RunFactory(collection=collection, name="bm25")
    llm = JudgeFactory(name="llm-filter", kind=Judge.Kind.LLM)
    made = [TurnFactory(topic=topic, position=position) for position in range(1, turns + 1)]
    for turn in made:
        RankingFactory(run=run, turn=turn, passage_ids=[f"d{i}" for i in range(1, 7)])
    for pid, grade in (("d4", 3), ("d5", 0), ("d6", 1)):
        RelevanceJudgmentFactory(judge=llm, turn=made[0], passage_id=pid, grade=grade)
    return collection, llm, made


def _build(client, collection, llm):
    return client.post(
        reverse("console-pools", args=[collection.name]),
        {
            "name": "adaptive6",
            "depth": 6,
            "adaptive": "on",
            "always_depth": 3,
            "filter_judge": llm.pk,
            "min_grade": 2,
        },
        follow=True,
    )


def test_it_names_the_turns_the_filter_could_not_filter_when_it_builds_and_shows_a_pool(client, organiser):
    collection, llm, turns = _campaign(3)

    response = _build(client, collection, llm)
    pools = client.get(reverse("console-pools", args=[collection.name]))

    assert (response.status_code, pools.status_code) == (200, 200)
    page = response.content.decode()
    said = "6 deeper pairs in 2 turns entered unfiltered (the filter judge has not graded them): 1_2, 1_3"
    assert f'<li class="warning">{said}.</li>' in page
    assert f'<p class="card" id="pool-unfiltered" role="status">{said}.' in page
    assert '<strong id="pool-saved">2</strong> of 18 candidate pairs' in page
    assert "<td>1_1</td><td>4</td><td>3</td><td>1</td><td>2</td><td>0</td>" in page
    assert "<td>1_2</td><td>6</td><td>3</td><td>0</td><td>0</td><td>3</td>" in page
    assert "(not graded by it in 2 turns: pooled unfiltered)" in pools.content.decode()
    pool = Pool.objects.get(name="adaptive6")
    assert pool.entries.count() == 16
    assert pool.entries.filter(turn=turns[0], passage_id__in=["d5", "d6"]).count() == 0


def test_it_counts_as_saved_only_what_the_filter_graded_in_a_pool_that_dropped_ungraded_pairs(
    client, organiser
):
    collection, llm, turns = _campaign(2)
    # As pools were built before ungraded pairs were kept: turn 2's deeper ranks dropped, unseen.
    pool = Pool.objects.create(
        collection=collection,
        name="old",
        depth=6,
        adaptive=True,
        always_depth=3,
        filter_judge=llm,
        min_grade=2,
    )
    for turn in turns:
        for rank in range(1, 4):
            PoolEntry.objects.create(pool=pool, turn=turn, passage_id=f"d{rank}", best_rank=rank)
    PoolEntry.objects.create(
        pool=pool, turn=turns[0], passage_id="d4", best_rank=4, filter_grade=3, via_filter=True
    )

    response = client.get(reverse("console-pool", args=[collection.name, "old"]))

    assert response.status_code == 200
    page = response.content.decode()
    assert '<strong id="pool-saved">2</strong> of 12 candidate pairs' in page
    assert "3 pairs the runs rank within depth 6 are not in the pool though the filter judge" in page
    assert "(turns 1_2)" in page
    assert "entered unfiltered" not in page
    assert pool.entries.count() == 7


def test_it_reads_a_pool_page_in_as_many_queries_at_any_size(client, organiser):
    counts = []
    for turns in (2, 8):
        Pool.objects.all().delete()
        collection, llm, _turns = _campaign(turns)
        _build(client, collection, llm)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse("console-pool", args=[collection.name, "adaptive6"]))
        assert response.status_code == 200
        counts.append(len(queries))
        collection.delete()
        llm.delete()

    assert counts[0] == counts[1]
