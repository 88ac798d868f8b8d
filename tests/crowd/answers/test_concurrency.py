"""Crowd submits at the same instant: a batch never takes more than its places, a repeat is a repeat.

Each submit runs in its own thread with its own connection. The batch row is locked while a submit
counts the places and looks up the worker's assignment (SELECT ... FOR UPDATE).
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign
from crowd.providers.links.selectors import link_token
from tests.concurrency import at_the_same_instant
from tests.crowd.crowd_helpers import build_campaign

pytestmark = pytest.mark.django_db(transaction=True)


def _post(url: str, fields: dict[str, str]) -> tuple[int, str]:
    response = Client().post(url, fields)
    return response.status_code, response.content.decode()


def _batch_and_answers(assignments: int):
    campaign = build_campaign(
        provider=CrowdCampaign.Provider.PLATFORM, batch_size=10, assignments=assignments
    )
    batch = campaign.batches.get()
    answers = {f"q{n}": "yes" for n in range(1, batch.items.count() + 1)}
    return batch, answers


def test_eight_links_submitted_at_once_fill_a_batch_of_two_and_no_more(tmp_path):
    batch, answers = _batch_and_answers(assignments=2)
    urls = [reverse("crowd:link-take", args=[link_token(batch=batch, label=f"anon-{n}")]) for n in range(8)]

    results, errors = at_the_same_instant(lambda url: _post(url, answers), urls)

    assert errors == []
    statuses = sorted(status for status, _ in results)
    assert statuses == [200, 200, 409, 409, 409, 409, 409, 409]
    assert all("all the answers it needs" in body for status, body in results if status == 409)
    assert CrowdAssignment.objects.filter(batch=batch).count() == 2
    assert CrowdAnswer.objects.filter(assignment__batch=batch).count() == 2 * batch.items.count()


def test_ten_submits_of_one_link_at_once_store_it_once_and_answer_the_rest_as_repeats(tmp_path):
    batch, answers = _batch_and_answers(assignments=3)
    url = reverse("crowd:link-take", args=[link_token(batch=batch, label="anon-1")])

    results, errors = at_the_same_instant(lambda _: _post(url, answers), range(10))

    assert errors == []
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * 9
    assert all("already answered this batch" in body for status, body in results if status == 409)
    assert CrowdAssignment.objects.get(batch=batch).worker.worker_id == "link:anon-1"
    assert CrowdAnswer.objects.filter(assignment__batch=batch).count() == batch.items.count()
