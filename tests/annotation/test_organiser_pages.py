"""One organiser check for every organiser page: anonymous visitors go to the login page, assessors get
the site's 403 page (with its navigation), organisers get the page."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Collection
from judging.models import JudgeJob
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import JudgeFactory, OrganiserFactory, RunFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    """A crowd campaign's collection with a run and a judge job on it: enough for every organiser page."""
    campaign = build_campaign(batch_size=10)
    collection = Collection.objects.get(pk=campaign.collection_id)
    run = RunFactory(collection=collection, name="run-z")
    job = JudgeJob.objects.create(
        collection=collection,
        judge=JudgeFactory(),
        task=JudgeJob.Task.RELEVANCE,
        model="m",
        prompt_version="v",
    )
    return {"collection": collection.name, "run": run.name, "job": job.pk, "campaign": campaign.name}


# URL name -> (its arguments, from the `world` fixture's names or `=literal`; the method; what an
# organiser gets: 200, or the view's own 400 when it needs query parameters or a posted form).
ORGANISER_PAGES = {
    "relevance-organise": ([], "get", 200),
    "support-organise": (["collection"], "get", 200),
    "support-leaderboard": (["collection"], "get", 200),
    "support-disagreements": (["collection"], "get", 200),
    "judging:evaluation-index": ([], "get", 200),
    "judging:evaluation-runs": (["collection"], "get", 200),
    "judging:evaluation-run": (["collection", "run"], "get", 200),
    "judging:agreement-index": ([], "get", 200),
    "judging:agreement-report": (["collection"], "get", 200),
    "judging:agreement-download": (["collection", "=report.json"], "get", 400),
    "judging:agreement-ranking": (["collection"], "get", 200),
    "judging:agreement-ranking-download": (["collection", "=ranking.json"], "get", 400),
    "judging:agreement-campaign": (["collection"], "get", 200),
    "judging:agreement-live": (["collection"], "get", 200),
    "judging:agreement-live-data": (["collection"], "get", 200),
    "judging:job-list": ([], "get", 200),
    "judging:job-start": ([], "post", 400),
    "judging:job-detail": (["job"], "get", 200),
    "judging:job-progress": (["job"], "get", 200),
    "judging:hybrid-estimate": (["collection"], "get", 200),
    "judging:hybrid-budget": (["collection"], "get", 200),
    "mturk:campaign": (["campaign"], "get", 200),
}


def _url(name, world):
    args = [arg[1:] if arg.startswith("=") else world[arg] for arg in ORGANISER_PAGES[name][0]]
    return reverse(name, args=args)


def _organiser_views(resolver=None, namespace=""):
    """(URL name, view) of every route whose view carries the organiser check."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _organiser_views(entry, inner)
        elif isinstance(entry, URLPattern) and getattr(entry.callback, "organiser_only", False):
            yield f"{namespace}{entry.name}"


def test_each_page_pinned_here_carries_the_organiser_check():
    assert set(ORGANISER_PAGES) - set(_organiser_views()) == set()


@pytest.mark.parametrize("name", sorted(ORGANISER_PAGES))
def test_an_organiser_page_sends_anonymous_to_login_refuses_assessors_and_serves_organisers(
    client, world, name
):
    url = _url(name, world)
    _args, method, organiser_status = ORGANISER_PAGES[name]
    fetch = getattr(client, method)

    response = fetch(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))

    client.force_login(UserFactory())
    response = fetch(url)
    assert response.status_code == 403
    page = response.content.decode()
    assert 'id="forbidden"' in page
    assert 'id="nav-crowd"' in page  # the site's navigation, so an assessor can go back to work
    assert "This page is for organisers." in page

    client.force_login(OrganiserFactory())
    response = fetch(url)
    assert response.status_code == organiser_status
