"""What an in-platform campaign says and does at the edges: a batch with every place answered reads
Complete or Full (never Open), panel participants fill one batch before the next so a small panel still
gives batches their majority, and a worker link whose batch others filled gets work or a page saying why."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdBatch, CrowdCampaign, CrowdStudy
from crowd.providers.links.selectors import link_token
from crowd.providers.panels.services import study_create
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db


def _answers(batch: CrowdBatch, *, pass_tests: bool = True) -> dict[int, bool]:
    return {
        item.position: (item.test_question.answer == pass_tests) if item.is_test else True
        for item in batch.items.select_related("test_question")
    }


def _fill(batch: CrowdBatch, *workers: str, pass_tests: bool = True) -> None:
    for name in workers:
        worker = worker_get_or_create(worker_id=name)
        assignment_submit(batch=batch, worker=worker, answers=_answers(batch, pass_tests=pass_tests))


def _form(page) -> dict[str, str]:
    total = page.context["total"]
    return {f"q{n}": "no" for n in range(1, total + 1)}


def _study_url(study: CrowdStudy, pid: str) -> str:
    return reverse("crowd:study", args=[study.key]) + "?" + urlencode({"PROLIFIC_PID": pid})


# --- batch states on the campaign page -------------------------------------------------------------


def test_it_shows_a_batch_with_every_place_answered_as_complete_or_full_not_open(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=2)
    first, second = campaign.batches.order_by("index")
    _fill(first, "w1", "w2")
    _fill(second, "w1")
    _fill(second, "w3", pass_tests=False)
    client.force_login(OrganiserFactory())

    response = client.get(reverse("crowd:campaign", args=[campaign.name]))

    assert response.status_code == 200
    rows = response.context["report"].batches
    assert [(row.state, row.state_kind) for row in rows] == [
        ("Complete", "complete"),
        ("Full: 1 of 2 failed the tests", "full"),
    ]
    html = response.content.decode()
    assert '<td class="crowd-batch-complete">Complete</td>' in html
    assert ">Open<" not in html
    summary = response.context["report"].summary
    assert (summary.complete, summary.full, summary.open, summary.answered, summary.places) == (1, 1, 0, 4, 4)
    assert CrowdBatch.objects.filter(campaign=campaign, status=CrowdBatch.Status.OPEN).count() == 2


def test_it_shows_an_open_batch_with_its_free_places_and_the_participants_still_needed(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=3)
    _fill(campaign.batches.get(index=0), "w1")
    client.force_login(OrganiserFactory())

    response = client.get(reverse("crowd:campaign", args=[campaign.name]))

    assert response.status_code == 200
    states = [row.state for row in response.context["report"].batches]
    assert states == ["Open: 2 of 3 places free", "Open: 3 of 3 places free"]
    html = response.content.decode()
    assert "need <strong>5 more participants</strong> (one batch each)" in html


def test_it_keeps_the_campaign_page_query_count_flat_as_batches_answers_and_workers_grow(client):
    client.force_login(OrganiserFactory())

    def read(batch_size: int):
        campaign = build_campaign(
            provider=CrowdCampaign.Provider.PLATFORM, batch_size=batch_size, nuggets=(5, 5, 5)
        )
        for batch in campaign.batches.all():
            # Workers of its own for each batch, one failing the tests: workers grow with the batches.
            _fill(batch, f"a-{batch.pk}")
            _fill(batch, f"b-{batch.pk}", pass_tests=False)
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse("crowd:campaign", args=[campaign.name]))
        return response, len(captured)

    (small, small_queries), (large, large_queries) = read(batch_size=10), read(batch_size=1)

    assert (small.status_code, large.status_code) == (200, 200)
    assert (small.context["report"].summary.batches, large.context["report"].summary.batches) == (3, 30)
    assert (len(small.context["report"].workers), large.context["worker_pager"].page.paginator.count) == (
        6,
        60,
    )
    assert small_queries == large_queries
    assert CrowdBatch.objects.count() == 33
    # 30 pairs and a test question per batch, answered by two workers: (30 + 3) * 2 and (30 + 30) * 2.
    assert CrowdAnswer.objects.count() == 66 + 120


# --- panel studies: packed batches and held places -------------------------------------------------


def test_it_fills_one_batch_to_its_majority_before_starting_the_next():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=3)
    study = study_create(campaign=campaign, completion_code="DONE")

    # Four participants open the study together, none has submitted yet.
    pages = [Client().get(_study_url(study, pid)) for pid in ("p1", "p2", "p3", "p4")]

    assert [page.status_code for page in pages] == [200, 200, 200, 200]
    assert [page.context["batch"].index for page in pages] == [0, 0, 0, 1]
    held = CrowdAssignment.objects.filter(status=CrowdAssignment.Status.ACCEPTED)
    assert sorted(held.values_list("batch__index", flat=True)) == [0, 0, 0, 1]


def test_it_keeps_the_participants_batch_on_reload_and_times_the_work_from_opening():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=3)
    study = study_create(campaign=campaign, completion_code="DONE")
    participant = Client()
    first = participant.get(_study_url(study, "p1"))
    opened = CrowdAssignment.objects.get().accept_time

    again = participant.get(_study_url(study, "p1"))
    done = participant.post(_study_url(study, "p1"), {"batch": first.context["batch"].id, **_form(first)})

    assert (first.status_code, again.status_code, done.status_code) == (200, 200, 200)
    assert again.context["batch"] == first.context["batch"]
    assignment = CrowdAssignment.objects.get()
    assert (assignment.status, assignment.accept_time) == (CrowdAssignment.Status.SUBMITTED, opened)


def test_it_gives_a_held_place_to_someone_else_after_the_work_time():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    study = study_create(campaign=campaign, completion_code="DONE")
    Client().get(_study_url(study, "gone"))
    assert Client().get(_study_url(study, "next")).context["batch"].index == 1

    CrowdAssignment.objects.filter(worker__worker_id="prolific:gone").update(
        accept_time=timezone.now() - timedelta(seconds=campaign.duration_seconds + 1)
    )
    late = Client().get(_study_url(study, "late"))

    assert late.status_code == 200
    assert late.context["batch"].index == 0


def test_it_shows_places_being_answered_on_the_campaign_page(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=3)
    study = study_create(campaign=campaign, completion_code="DONE")
    Client().get(_study_url(study, "p1"))
    client.force_login(OrganiserFactory())

    response = client.get(reverse("crowd:campaign", args=[campaign.name]))

    assert response.status_code == 200
    assert response.context["report"].batches[0].state == "Open: 3 of 3 places free, 1 being answered now"
    assert response.context["report"].workers == []


# --- worker links ----------------------------------------------------------------------------------


def test_it_gives_a_link_another_batch_when_others_filled_its_own():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    first, second = campaign.batches.order_by("index")
    _fill(first, "user:someone")
    url = reverse("crowd:link-take", args=[link_token(batch=first, label="anon-0-1")])
    worker = Client()

    page = worker.get(url)

    assert page.status_code == 200
    assert page.context["batch"] == second
    html = page.content.decode()
    assert "Others answered this link&#x27;s batch first" in html
    assert f'name="batch" value="{second.id}"' in html
    done = worker.post(url, {"batch": second.id, **_form(page)})
    assert done.status_code == 200
    assert "your answers are saved" in done.content.decode()
    assert CrowdAssignment.objects.get(worker__worker_id="link:anon-0-1").batch == second


def test_it_says_why_when_a_links_campaign_has_nothing_left_to_answer():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    first, second = campaign.batches.order_by("index")
    _fill(first, "user:a")
    _fill(second, "user:b")

    page = Client().get(reverse("crowd:link-take", args=[link_token(batch=first, label="anon-0-1")]))

    assert page.status_code == 410
    assert "Every batch of this study has the answers it needs" in page.content.decode()
    assert not CrowdAssignment.objects.filter(worker__worker_id="link:anon-0-1").exists()


def test_it_refuses_a_posted_batch_of_another_campaign():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1)
    other = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=1).batches.first()
    url = reverse("crowd:link-take", args=[link_token(batch=campaign.batches.first(), label="anon-0-1")])

    response = Client().post(url, {"batch": other.id, "q1": "yes"})

    assert response.status_code == 400
    assert "No such batch in this study" in response.content.decode()
    assert not CrowdAssignment.objects.exists()


def test_it_writes_every_amount_of_an_unpaid_campaign_in_cents():
    from crowd.campaigns.report import campaign_report
    from tests.crowd.crowd_helpers import build_campaign

    report = campaign_report(campaign=build_campaign(provider=CrowdCampaign.Provider.PLATFORM))
    assert [str(report.reward_total), str(report.bonus_total), str(report.cost_total)] == ["0.00"] * 3
