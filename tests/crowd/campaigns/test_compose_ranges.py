"""Composing a campaign refuses numbers its columns cannot hold with the form's reason (found by tests/fuzz:
a seed of thirty nines gave a 500 when the campaign row was written)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from crowd.models import CrowdCampaign
from tests.crowd.crowd_helpers import compose_collection
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db


def _compose(client, **changes):
    client.force_login(OrganiserFactory())
    post = {
        "collection": "demo",
        "name": "web-crowd",
        "provider": "platform",
        "nugget_judge": "demo-gold",
        "seed": 1,
        "batch_size": 3,
        "tests_per_batch": 1,
        "assignments": 2,
        "generate_tests": 4,
        "reward": "0.50",
    }
    return client.post(reverse("crowd:campaign-new"), {**post, **changes})


@pytest.mark.parametrize("seed", ["9" * 30, str(2**31), str(-(2**31) - 1)])
def test_it_refuses_a_seed_past_the_seed_column(client, seed):
    compose_collection()

    response = _compose(client, seed=seed)

    assert response.status_code == 400
    assert "Ensure this value is" in response.content.decode()
    assert not CrowdCampaign.objects.exists()


@pytest.mark.parametrize(
    ("field", "reason"),
    [("turns", f"no turn {'9' * 30} in collection demo"), ("runs", f"“{'9' * 30}” is not a valid value.")],
)
def test_it_refuses_a_turn_or_run_key_past_the_databases_integers(client, field, reason):
    # Turns are named by id (a text), runs chosen by key.
    compose_collection()

    response = _compose(client, **{field: ["9" * 30]})

    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not CrowdCampaign.objects.exists()


def test_it_still_composes_with_the_largest_seed(client):
    compose_collection()

    response = _compose(client, seed=str(2**31 - 1))

    assert response.status_code == 302
    assert CrowdCampaign.objects.get().seed == 2**31 - 1
