"""The budget page as an organiser uses it: submit the form, let a task worker simulate, open the result."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from judging.hybrid.views import BUDGET_INITIAL
from tests.background import tasks_run_ready


def budget_simulated(client: Client, collection: str, query: dict[str, Any]) -> Any:
    """Submit the budget form, run the queued simulation here, and return the simulation's page."""
    # A browser sends every field; a test names the ones it is about, the others keep the form's initial.
    submitted = client.post(reverse("judging:hybrid-budget", args=[collection]), {**BUDGET_INITIAL, **query})
    assert submitted.status_code == 302, submitted.content.decode()[:2000]
    tasks_run_ready()
    return client.get(submitted["Location"])
