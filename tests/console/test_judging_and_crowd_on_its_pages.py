"""The console sits on judging and crowd and shows their judge jobs, campaigns and pages on its home and a
collection's dashboard; the apps below it name neither a higher app's models nor its URLs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from judging.models import JudgeJob
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import CollectionFactory, JudgeFactory, OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("assay", "core", "annotation", "judging", "crowd", "console", "devtools")
# Where each app's pages and code live, and the URL namespaces of the apps above it, which it may not
# name: a link down the layers is a dependency import-linter cannot see. (The site layout, base.html,
# belongs to the project and links everywhere.)
LOWER_APPS = [
    (
        ("relevance", "nuggets", "rag_nuggets", "support"),
        ("annotation",),
        ("judging", "mturk", "crowd"),
    ),
    (("mturk", "crowd"), ("crowd",), ("judging",)),
]


def _judge_job(collection, **fields) -> JudgeJob:
    return JudgeJob.objects.create(
        collection=collection,
        judge=JudgeFactory(),
        task=JudgeJob.Task.RELEVANCE,
        model="m",
        prompt_version="v1",
        **fields,
    )


def test_it_lists_crowd_campaigns_and_judge_jobs_on_the_organisers_home(client):
    campaign = build_campaign()
    job = _judge_job(campaign.collection)
    client.force_login(OrganiserFactory())

    response = client.get(reverse("home"))

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="home-campaigns"' in html
    assert f'href="{reverse("crowd:campaign", args=[campaign.name])}">{campaign.name}</a>' in html
    assert f'href="{reverse("judging:job-detail", args=[job.pk])}">judge job {job.pk}</a>' in html


def test_it_offers_crowd_work_to_assessors_without_the_organisers_sections(client):
    build_campaign()
    client.force_login(UserFactory())

    response = client.get(reverse("home"))

    assert response.status_code == 200
    html = response.content.decode()
    assert f'href="{reverse("crowd:home")}">Crowd</a>' in html
    assert 'id="home-campaigns"' not in html


def test_it_shows_the_collections_judge_jobs_and_live_agreement_on_its_dashboard(client):
    collection = CollectionFactory()
    job = _judge_job(collection, units_total=4, units_done=3, units_failed=1)
    other = _judge_job(CollectionFactory())
    client.force_login(OrganiserFactory())

    response = client.get(reverse("console-dashboard", args=[collection.name]))

    assert response.status_code == 200
    html = response.content.decode()
    assert f'href="{reverse("judging:agreement-live", args=[collection.name])}" id="live-agreement"' in html
    assert f'href="{reverse("judging:job-detail", args=[job.pk])}">judge job {job.pk}</a>' in html
    assert "(1 failed)" in html and "3 / 4" in html
    assert f"judge job {other.pk}<" not in html


def test_it_leaves_no_app_registry_shortcut_in_product_code():
    # import-linter sees imports only; a model fetched by app label is a dependency it cannot see.
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "get_model(" in line
    ]
    assert offenders == []


@pytest.mark.parametrize(("folders", "packages", "upper"), LOWER_APPS)
def test_it_keeps_a_lower_apps_pages_and_code_out_of_the_upper_apps_urls(folders, packages, upper):
    names = "|".join(upper)
    in_templates = re.compile(r"\{%\s*url\s+['\"](?:" + names + "):")
    in_code = re.compile(r"['\"](?:" + names + r"):[a-z-]+['\"]")
    files = [
        *(path for folder in folders for path in sorted((ROOT / "templates" / folder).rglob("*.html"))),
        *(path for package in packages for path in sorted((ROOT / package).rglob("*.py"))),
    ]
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if (in_templates if path.suffix == ".html" else in_code).search(line)
    ]
    assert files
    assert offenders == []
