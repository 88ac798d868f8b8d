"""The crowd pages at size: the campaign page shows its Batches and Workers tables a page at a time (each
with its own page number in the query string) while its totals cover every batch, counts answers in the
database without reading them, and the campaigns list counts with one grouped query per kind."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdBatch, CrowdCampaign
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db


def _fill(batch: CrowdBatch, worker_id: str) -> None:
    answers = {
        item.position: item.test_question.answer if item.is_test else True
        for item in batch.items.select_related("test_question")
    }
    assignment_submit(batch=batch, worker=worker_get_or_create(worker_id=worker_id), answers=answers)


@pytest.fixture
def sixty_batches() -> CrowdCampaign:
    """60 pairs in batches of one pair and one test question, two places each."""
    return build_campaign(
        provider=CrowdCampaign.Provider.PLATFORM, batch_size=1, assignments=2, nuggets=(10, 10, 10)
    )


def _page(client, campaign: CrowdCampaign, query: str = ""):
    client.force_login(OrganiserFactory())
    return client.get(reverse("crowd:campaign", args=[campaign.name]) + query)


def test_it_shows_the_second_page_of_batches_with_totals_over_every_batch(client, sixty_batches):
    _fill(sixty_batches.batches.get(index=55), "late-worker")
    _fill(sixty_batches.batches.get(index=3), "early-worker")

    response = _page(client, sixty_batches, "?batch_page=2")

    assert response.status_code == 200
    rows = response.context["report"].batches
    assert [row.index for row in rows] == list(range(50, 60))
    assert rows[5].state == "Open: 1 of 2 places free"
    assert all(row.submitted == 0 for row in rows if row.index != 55)
    summary = response.context["report"].summary
    assert (summary.batches, summary.open, summary.places, summary.answered) == (60, 60, 120, 2)
    html = response.content.decode()
    assert "Batches 51–60 of 60, page 2 of 2" in html
    assert 'href="?batch_page=1#crowd-batches" rel="prev"' in html
    assert 'rel="next"' not in html
    assert CrowdBatch.objects.filter(campaign=sixty_batches).count() == 60


def test_it_shows_the_first_page_of_batches_for_a_missing_or_unreadable_page_number(client, sixty_batches):
    first, junk, beyond = (
        _page(client, sixty_batches, query) for query in ("", "?batch_page=x", "?batch_page=9")
    )

    assert (first.status_code, junk.status_code, beyond.status_code) == (200, 200, 200)
    assert [row.index for row in first.context["report"].batches] == list(range(50))
    assert [row.index for row in junk.context["report"].batches] == list(range(50))
    # Past the end is the last page, as Paginator.get_page has it.
    assert [row.index for row in beyond.context["report"].batches] == list(range(50, 60))
    assert 'href="?batch_page=2#crowd-batches" rel="next"' in first.content.decode()


def test_it_pages_workers_on_their_own_and_keeps_the_batch_page_in_its_links(client, sixty_batches):
    for n, batch in enumerate(sixty_batches.batches.order_by("index")[:55]):
        _fill(batch, f"w{n:02d}")

    response = _page(client, sixty_batches, "?batch_page=2&worker_page=2")

    assert response.status_code == 200
    workers = response.context["report"].workers
    assert [w.worker_id for w in workers] == [f"w{n}" for n in range(50, 55)]
    assert [(w.assignments, w.answers, w.tests, w.tests_right) for w in workers] == [(1, 2, 1, 1)] * 5
    assert [row.index for row in response.context["report"].batches] == list(range(50, 60))
    html = response.content.decode()
    assert "Workers 51–55 of 55, page 2 of 2" in html
    assert 'href="?batch_page=2&amp;worker_page=1#crowd-workers" rel="prev"' in html
    assert CrowdAssignment.objects.filter(batch__campaign=sixty_batches).count() == 55


def test_it_counts_answers_in_the_database_without_reading_them(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=2)
    for batch in campaign.batches.all():
        _fill(batch, f"a-{batch.pk}")
        _fill(batch, f"b-{batch.pk}")

    with CaptureQueriesContext(connection) as captured:
        response = _page(client, campaign)

    assert response.status_code == 200
    report = response.context["report"]
    assert [(w.answers, w.tests, w.tests_right) for w in report.workers] == [(6, 1, 1)] * 4
    assert report.alpha is None  # everyone said yes: no disagreement to measure
    reads = [q["sql"] for q in captured if '"crowd_crowdanswer"' in q["sql"]]
    assert reads
    assert all("GROUP BY" in sql for sql in reads), reads
    assert CrowdAnswer.objects.filter(assignment__batch__campaign=campaign).count() == 24


def test_it_counts_each_campaigns_batches_and_answers_without_distinct_counts(client):
    client.force_login(OrganiserFactory())
    wide = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=1, assignments=2)
    narrow = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=5, assignments=2)
    for batch in wide.batches.order_by("index")[:3]:
        _fill(batch, f"a-{batch.pk}")
        _fill(batch, f"b-{batch.pk}")
    _fill(narrow.batches.get(index=0), "solo")
    # A held place (a panel participant at work) and a rejected answer count for no campaign.
    CrowdAssignment.objects.filter(worker__worker_id="solo").update(status=CrowdAssignment.Status.REJECTED)
    CrowdAssignment.objects.create(
        batch=narrow.batches.get(index=1),
        worker=worker_get_or_create(worker_id="held"),
        assignment_id="held-1",
        status=CrowdAssignment.Status.ACCEPTED,
    )

    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("crowd:campaigns"))
    third = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=1, assignments=1)
    for batch in third.batches.all():
        _fill(batch, f"c-{batch.pk}")
    with CaptureQueriesContext(connection) as again:
        assert client.get(reverse("crowd:campaigns")).status_code == 200

    assert response.status_code == 200
    counts = {r.campaign.name: (r.n_batches, r.n_answered) for r in response.context["campaigns"]}
    assert counts == {wide.name: (10, 6), narrow.name: (2, 0)}
    assert not [q["sql"] for q in captured if "DISTINCT" in q["sql"].upper()]
    assert len(again) == len(captured)
    assert CrowdAssignment.objects.count() == 8 + 10
