"""Drawing a human sample by clicking: from the evaluation page's estimate panel to the estimates page,
the draw form fills in, the sample is drawn and handed to an assessor, and the page shows it chosen."""

import pytest

from annotation.models import Assignment, RelevanceJudgment
from annotation.relevance.pooling import pool_build
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

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_organiser_draws_a_sample_and_hands_it_to_an_assessor_by_clicking(page, login):
    collection = CollectionFactory(name="clicks")
    machine = JudgeFactory(name="llm")
    run = RunFactory(collection=collection, name="run-a")
    for t in range(6):
        turn = TurnFactory(topic=TopicFactory(collection=collection, number=str(t + 1)), position=1)
        RankingFactory(run=run, turn=turn, passage_ids=[f"d{t}0", f"d{t}1"])
        for p in range(2):
            RelevanceJudgment.objects.create(
                judge=machine, turn=turn, passage_id=f"d{t}{p}", grade=(t + p) % 5
            )
    pool_build(collection=collection, name="top2", depth=2)
    UserFactory(username="ann")
    OrganiserFactory(username="org")
    login("org")

    page.goto("/judging/evaluation/clicks/")
    page.click("#hybrid-draw-link")
    page.wait_for_url("**/judging/evaluation/clicks/hybrid/**")
    page.fill("#id_draw-name", "pilot")
    page.select_option("#id_draw-pool", "top2")
    page.select_option("#id_draw-machine_judge", "llm")
    page.fill("#id_draw-budget", "3")
    page.get_by_label("ann", exact=True).check()
    page.click("#hybrid-draw")
    page.wait_for_url("**/hybrid/?sample=pilot")

    assert "Sample pilot: 3 of 6 turns drawn" in page.locator(".messages").inner_text()
    row = page.locator("#hybrid-sample-list tbody tr", has_text="pilot")
    assert "0 of 3" in row.inner_text()
    assert page.locator("#id_sample").input_value() == "pilot"
    assert page.locator("#id_machine_judge").input_value() == "llm"
    sample = HumanSample.objects.get(name="pilot")
    assert sample.units.count() == 3
    assert [u.username for u in Assignment.objects.get(name="pilot").assessors.all()] == ["ann"]
