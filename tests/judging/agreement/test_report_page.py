"""Agreement pages on a collection with nothing to compare answer with a reason, never an error; the
comparison page puts the run-ranking scatter of the same two judges beside the label figures."""

from __future__ import annotations

import re

import ir_measures
import pytest
from django.urls import reverse
from scipy import stats

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

# What the pages say, computed within the request (tests/judging/conftest.py).
pytestmark = pytest.mark.usefixtures("reports_in_request")


@pytest.mark.django_db
def test_every_agreement_page_of_an_empty_collection_answers_with_a_reason(client):
    collection = CollectionFactory()
    a, b = JudgeFactory(), JudgeFactory()
    client.force_login(OrganiserFactory())
    name = collection.name
    judges = {"a": a.name, "b": b.name}
    for url, query, status, says in [
        (reverse("judging:agreement-index"), {}, 200, name),
        (reverse("judging:agreement-report", args=[name]), {}, 200, "Compare"),
        (
            reverse("judging:agreement-report", args=[name]),
            {"task": "relevance", **judges},
            400,
            "share no labelled relevance units",
        ),
        (reverse("judging:agreement-ranking", args=[name]), {}, 200, "Compare rankings"),
        *[
            (reverse("judging:agreement-ranking", args=[name]), {"measure": m, **judges}, 400, "no run has")
            for m in ("ndcg@5", "support-weighted-precision", "nugget-recall-ntr")
        ],
        (reverse("judging:agreement-campaign", args=[name]), {}, 200, "No two judges share"),
        (reverse("judging:agreement-live", args=[name]), {}, 200, "Live agreement"),
    ]:
        response = client.get(url, query)
        assert response.status_code == status, (url, query)
        assert says in response.content.decode(), (url, query)
    data = client.get(reverse("judging:agreement-campaign", args=[name]), {"format": "json"}).json()
    assert all(section["rows"] == [] for section in data["sections"])
    live = client.get(reverse("judging:agreement-live-data", args=[name])).json()
    assert live["assessors"] == [] and live["llm_judges"] == []


GRADES_A = {"d1": 4, "d2": 2, "d3": 0, "d4": 1, "d5": 3}
GRADES_B = {"d1": 3, "d2": 0, "d3": 1, "d4": 2, "d5": 3}
ORDERS = {
    "run-a": ["d1", "d2", "d3", "d4", "d5"],
    "run-b": ["d5", "d4", "d3", "d2", "d1"],
    "run-c": ["d3", "d1", "d2", "d4", "d5"],
}


@pytest.fixture
def judged():
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection, number="1"))
    a, b = JudgeFactory(name="nist"), JudgeFactory(name="gpt-4o")
    for pid in GRADES_A:
        RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=pid, grade=GRADES_A[pid])
        RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=pid, grade=GRADES_B[pid])
    return collection, turn, a, b


@pytest.mark.django_db
def test_the_comparison_page_shows_the_run_ranking_scatter_of_the_same_judges(client, judged):
    collection, turn, a, b = judged
    for name, order in ORDERS.items():
        RankingFactory(run=RunFactory(collection=collection, name=name), turn=turn, passage_ids=order)
    client.force_login(OrganiserFactory())
    response = client.get(
        reverse("judging:agreement-report", args=[collection.name]),
        {"task": "relevance", "a": a.name, "b": b.name},
    )
    assert response.status_code == 200
    page = response.content.decode()

    def ndcg5(grades):
        qrels = {turn.turn_id: dict(grades)}
        return [
            ir_measures.calc_aggregate(
                [ir_measures.nDCG @ 5], qrels, {turn.turn_id: {p: float(5 - r) for r, p in enumerate(o)}}
            )[ir_measures.nDCG @ 5]
            for o in ORDERS.values()
        ]

    tau = stats.kendalltau(ndcg5(GRADES_A), ndcg5(GRADES_B)).statistic
    assert f'<strong id="fig-beside-tau">{tau:.3f}</strong>' in page
    # The scatter is drawn from the comparison's stored figures; the ranking page draws the same one.
    beside = reverse("judging:agreement-download", args=[collection.name, "beside.svg"])
    assert f'src="{beside}?task=relevance&amp;a=nist&amp;b=gpt-4o"' in page
    image = client.get(beside, {"task": "relevance", "a": a.name, "b": b.name})
    scatter = reverse("judging:agreement-ranking-download", args=[collection.name, "scatter.svg"])
    same = client.get(scatter, {"measure": "ndcg@5", "a": a.name, "b": b.name})
    assert image.status_code == 200 and image["Content-Type"] == "image/svg+xml"
    # matplotlib dates each file and names its markers and clips at random.
    drawn = [
        re.sub(rb"\b[mp][0-9a-f]{10}\b", b"", re.sub(rb"<dc:date>.*?</dc:date>", b"", svg.content))
        for svg in (image, same)
    ]
    assert drawn[0] == drawn[1]


@pytest.mark.django_db
def test_the_comparison_page_says_when_no_run_is_scored_under_both_judges(client, judged):
    collection, _turn, a, b = judged
    client.force_login(OrganiserFactory())
    response = client.get(
        reverse("judging:agreement-report", args=[collection.name]),
        {"task": "relevance", "a": a.name, "b": b.name},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "No run is scored under both judges" in page and "fig-beside-tau" not in page


@pytest.mark.django_db
def test_the_campaign_page_links_back_but_the_standalone_file_does_not(client, judged, tmp_path):
    from django.core.management import call_command

    collection, _turn, _a, _b = judged
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:agreement-campaign", args=[collection.name]))
    assert response.status_code == 200
    page = response.content.decode()
    assert f'href="{reverse("judging:agreement-index")}"' in page
    assert f'href="{reverse("judging:agreement-report", args=[collection.name])}"' in page
    target = tmp_path / "report.html"
    call_command(
        "campaign_report", "--collection", collection.name, "--output", str(target), "--resamples", "20"
    )
    assert reverse("judging:agreement-index") not in target.read_text()
