"""The permission matrix of every organiser page and form: anonymous visitors go to the login page,
assessors and crowd workers get the site's 403 page (with its navigation) and change nothing by posting,
organisers get the page.

The list is read from the URL configuration, not written here: every route whose view carries the
organiser check (`organiser_required`) is tested, and every other route must be
named in NOT_ORGANISER_PAGES with whom it is for. A new page is therefore either checked or listed, and
an organiser page added without the check fails `test_every_route_is_an_organiser_page_or_listed_as_not`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Collection, RelevanceJudgment, Turn
from annotation.relevance.pooling import pool_build
from console.models import ImportJob
from console.people.services import person_create
from crowd.models import CrowdCampaign, CrowdWorker
from devtools.pagewalk import Route
from devtools.pagewalk import routes as _routes
from judging.models import BudgetSimulation, JudgeJob, ReportResult
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import JudgeFactory, OrganiserFactory, PassageFactory, RankingFactory, UserFactory

pytestmark = pytest.mark.django_db

# Every route that is not an organiser page, and whom it serves. (Admin pages have Django's own check.)
NOT_ORGANISER_PAGES = {
    # everyone, or the machinery
    "healthz": "load balancer",
    "readyz": "load balancer",
    "favicon": "browsers, on pages that link no icon",
    "login": "everyone",
    "logout": "everyone",
    "console-welcome": "an invited account's one-time link",
    "api-schema": "API clients",
    "api-token": "scripts, with a user name and password (limited like every log-in)",
    "api-docs": "API clients",
    # the REST API: DRF's own permissions (tests/annotation/api/test_api.py), organisers only for writes
    "api-collections": "API clients",
    "api-collection": "API clients",
    "api-topics": "API clients",
    "api-turns": "API clients",
    "api-passages": "API clients",
    "api-runs": "API clients",
    "api-responses": "API clients",
    "api-relevance": "API clients",
    "api-support": "API clients",
    "api-judges": "API clients",
    # the organiser pages' JSON, polled by their scripts: DRF views for organisers only, which answer in the
    # API's error shape (tests/console/test_pages.py, tests/judging/machine/test_llm_jobs_views.py,
    # tests/judging/agreement/test_views.py)
    "console-import-status": "organisers (DRF)",
    "judging:job-progress": "organisers (DRF)",
    "judging:agreement-live-data": "organisers (DRF)",
    # every signed-in account
    "home": "signed-in users",
    "collection-detail": "signed-in users",
    "account": "signed-in users (their own token)",
    "account-token-reset": "signed-in users (their own token)",
    # assessors' work, each reached through its owner
    "relevance-queue": "assessors",
    "relevance-next": "assessors",
    "relevance-resume": "assessors",
    "relevance-passage": "assessors",
    "relevance-ptkb": "assessors",
    "relevance-api-next": "assessors",
    "relevance-api-grade": "assessors",
    # the adjudicator's work, reached only through its adjudicator (tests/annotation/relevance/test_adjudication.py)
    "adjudication-queue": "adjudicators",
    "adjudication-start": "adjudicators",
    "adjudication-item": "adjudicators",
    "nuggets-index": "assessors",
    "nuggets-turns": "assessors",
    "nuggets-stats": "assessors",
    "nuggets-turn": "assessors",
    "nuggets-gold": "assessors",
    "nuggets-create": "assessors",
    "nuggets-update": "assessors",
    "nuggets-delete": "assessors",
    "nuggets-duplicate": "assessors",
    "support-assignments": "assessors",
    "support-unit": "assessors",
    "rag-nuggets-work": "assessors",
    "rag-nuggets-page": "assessors",
    "rag-nuggets-edit": "assessors",
    # crowd workers: accounts, signed links, MTurk's frame, panel participants
    "crowd:home": "crowd workers",
    "crowd:batch-take": "crowd workers",
    "crowd:link-take": "crowd workers",
    "crowd:hit": "crowd workers",
    "crowd:study": "crowd workers",
}


def _is_organiser_only(view: Any) -> bool:
    return bool(getattr(view, "organiser_only", False))


ORGANISER_ROUTES = sorted((r for r in _routes() if _is_organiser_only(r.view)), key=lambda r: r.name)

# What an organiser's GET answers where it is not the page itself: downloads that need their query
# string, and POST-only actions.
ORGANISER_GET_STATUS = {
    "console-export": 400,
    "judging:agreement-download": 400,
    "judging:agreement-ranking-download": 400,
    "judging:nugget-scores-download": 400,
    "judging:job-start": 405,
    "console-invitation-renew": 405,
    "console-invitation-revoke": 405,
    "console-login-unlock": 405,
    "console-import-resume": 405,
    "judging:job-resume": 405,
    "judging:hybrid-sample": 405,
    "judging:hybrid-budget-again": 405,
    "judging:report-again": 405,
    "judging:quality-pause": 405,
    "judging:quality-resume": 405,
    "relevance-organise": 302,  # the old address of the relevance work form
    **{
        f"crowd:campaign-{action}": 405
        for action in (
            "aggregate",
            "study",
            "qualification",
            "publish",
            "sync",
            "review",
            "bonus",
            "extend",
            "expire",
        )
    },
}


@pytest.fixture
def world():
    """An in-platform crowd campaign's collection with a run ranked on a turn, a pool of it, an upload and
    a judge job: enough for every organiser page, and for each form to have something to change."""
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    collection = Collection.objects.get(pk=campaign.collection_id)
    run = collection.runs.order_by("name").first()
    turn = Turn.objects.filter(collection=collection).first()
    passages = [PassageFactory(collection=collection) for _ in range(2)]
    RankingFactory(run=run, turn=turn, passage_ids=[p.passage_id for p in passages])
    pool = pool_build(collection=collection, name="pool-a", depth=2).pool
    upload = ImportJob.objects.create(
        collection=collection, kind=ImportJob.Kind.TOPICS, file_name="t.tsv", stored_path="/nonexistent"
    )
    job = JudgeJob.objects.create(
        collection=collection,
        judge=JudgeFactory(),
        task=JudgeJob.Task.RELEVANCE,
        model="m",
        prompt_version="v",
    )
    # The job's judge graded a pooled passage: a machine judge a human sample can be drawn against.
    RelevanceJudgment.objects.create(judge=job.judge, turn=turn, passage_id=passages[0].passage_id, grade=2)
    return {
        "collection": collection,
        "campaign": campaign,
        "run": run,
        "pool": pool,
        "upload": upload,
        "job": job,
        "simulation": BudgetSimulation.objects.create(
            collection=collection,
            params={"task": "relevance", "budgets": [10, 20]},
            params_key="",
            fingerprint="",
        ),
        "report": ReportResult.objects.create(
            kind="agreement-campaign",
            collection=collection,
            params_key="",
            key="",
            compute="",
            status="failed",
        ),
        "assessor": UserFactory(username="assessor-a"),
        "invited": person_create(username="invited-i"),
    }


def _argument(route: str, param: str, world: dict[str, Any]) -> str:
    """The value of one URL parameter of an organiser route, from the world fixture."""
    if param == "name":
        return world["campaign"].name if route.startswith("crowd:") else world["collection"].name
    if param == "pk":
        if route.startswith("console-import"):
            return str(world["upload"].pk)
        if route.startswith("judging:job-"):
            return str(world["job"].pk)
        if route.startswith("judging:hybrid-budget-"):
            return str(world["simulation"].pk)
        if route == "judging:report-again":
            return str(world["report"].pk)
    if param == "pool":
        return world["pool"].name
    if param == "run":
        return world["run"].name
    if param == "kind":
        kinds = {
            "console-export": "qrels",
            "judging:agreement-download": "report.json",
            "judging:agreement-ranking-download": "ranking.json",
            "judging:nugget-scores-download": "assignments",
        }
        if route in kinds:
            return kinds[route]
    if param == "username":
        return world["invited"].username
    pytest.fail(f"{route}: say in _argument which object its URL parameter {param!r} names")


def _url(route: Route, world: dict[str, Any]) -> str:
    return reverse(route.name, kwargs={p: _argument(route.name, p, world) for p in route.params})


# What a form would do if its check let the wrong person through: each posts a valid form, and the
# organiser's own post of it must change the database (test_an_organisers_post_of_each_form_changes_...).
Payload = Callable[[dict[str, Any]], dict[str, Any]]
FORMS: dict[str, Payload] = {
    "console-collection-new": lambda w: {"name": "posted-collection"},
    "console-collection": lambda w: {
        "kind": "topics",
        "file": SimpleUploadedFile("topics.tsv", b"posted-1\tWhat did the post do?\n"),
    },
    "console-pools": lambda w: {"name": "posted-pool", "depth": 2, "always_depth": 5, "min_grade": 2},
    "console-work": lambda w: {
        "form": "relevance",
        "pool": w["pool"].pk,
        "name": "posted-work",
        "assessors": [w["assessor"].pk],
        "unit_kind": "turn",
        "redundancy": 1,
        "lease_minutes": 60,
    },
    "console-people": lambda w: {"username": "mallory", "role": "organiser", "password": "pw-for-mallory-1"},
    "console-invitation-renew": lambda w: {},
    "console-invitation-revoke": lambda w: {},
    "console-login-unlock": lambda w: {"kind": "address", "value": "203.0.113.9"},
    "crowd:campaign-new": lambda w: {
        "collection": w["collection"].name,
        "name": "posted-campaign",
        "provider": CrowdCampaign.Provider.PLATFORM,
        "nugget_judge": w["campaign"].nugget_judge.name,
        "seed": 1,
        "batch_size": 10,
        "tests_per_batch": 0,
        "assignments": 1,
        "generate_tests": 0,
        "reward": "0.50",
    },
    "crowd:campaign-study": lambda w: {
        "panel": "prolific",
        "worker_param": "PROLIFIC_PID",
        "study_param": "STUDY_ID",
        "session_param": "SESSION_ID",
        "completion_code": "POSTED1",
    },
    "crowd:campaign-bonus": lambda w: {
        "bonus-amount": "1.00",
        "bonus-reason": "posted",
        "bonus-confirm": "on",
    },
    "crowd:campaign-extend": lambda w: {"extend-min_votes": 2, "extend-extra": 2, "extend-confirm": "on"},
    "crowd:campaign-aggregate": lambda w: {"min_votes": 1},
    "crowd:campaign-qualification": lambda w: {"qualification-threshold": 80, "qualification-questions": 1},
    "judging:job-start": lambda w: {
        "collection": w["collection"].name,
        "task": JudgeJob.Task.DEDUP,
        "judge_name": "posted-dedup",
        "source_judge": w["campaign"].nugget_judge.name,
        "exact_only": "on",
    },
    "judging:hybrid-sample": lambda w: {
        "draw-name": "posted-sample",
        "draw-pool": w["pool"].name,
        "draw-machine_judge": w["job"].judge.name,
        "draw-budget": 1,
        "draw-strategy": "uniform",
        "draw-assessors": [w["assessor"].pk],
    },
}
# Forms whose valid post changes the database for an organiser in this world (the others act on MTurk,
# or on answers the world has none of).
FORMS_THAT_WRITE = [
    "console-collection-new",
    "console-collection",
    "console-pools",
    "console-work",
    "console-people",
    "console-invitation-renew",
    "console-invitation-revoke",
    "crowd:campaign-new",
    "crowd:campaign-study",
    "judging:job-start",
    "judging:hybrid-sample",
]


def _database() -> dict[str, list[tuple]]:
    """Every row of every table (sessions aside: logging in writes one), to show that nothing changed."""
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values_list())
        for model in apps.get_models()
        if model._meta.label != "sessions.Session" and not model._meta.proxy
    }


def _crowd_worker():
    user = UserFactory(username="worker-w")
    CrowdWorker.objects.create(worker_id=f"user:{user.username}", user=user)
    return user


def _assert_forbidden_page(response) -> None:
    assert response.status_code == 403
    page = response.content.decode()
    assert 'id="forbidden"' in page
    assert 'id="nav-crowd"' in page  # the site's navigation, so they can go back to their own work
    assert "This page is for organisers." in page


def test_every_route_is_an_organiser_page_or_listed_as_not():
    routes = {r.name: r for r in _routes()}
    unlisted = {
        name
        for name, r in routes.items()
        if not _is_organiser_only(r.view) and name not in NOT_ORGANISER_PAGES
    }
    assert unlisted == set(), "add the organiser check to these views, or list them in NOT_ORGANISER_PAGES"
    checked_and_listed = {
        name for name in NOT_ORGANISER_PAGES if name in routes and _is_organiser_only(routes[name].view)
    }
    assert checked_and_listed == set()
    assert set(NOT_ORGANISER_PAGES) - set(routes) == set(), "routes listed here that no longer exist"
    # The matrix covers the console, the crowd campaign pages and the judging pages.
    names = {r.name for r in ORGANISER_ROUTES}
    assert {"console-collection-new", "console-people", "crowd:campaign-new", "judging:job-start"} <= names


def test_every_form_posted_here_is_an_organiser_route():
    assert set(FORMS) - {r.name for r in ORGANISER_ROUTES} == set()
    assert set(FORMS_THAT_WRITE) <= set(FORMS)


@pytest.mark.parametrize("route", ORGANISER_ROUTES, ids=lambda r: r.name)
def test_an_organiser_page_sends_anonymous_to_login_refuses_assessors_and_crowd_workers(client, world, route):
    url = _url(route, world)

    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))

    client.force_login(world["assessor"])
    _assert_forbidden_page(client.get(url))

    client.force_login(_crowd_worker())
    _assert_forbidden_page(client.get(url))

    client.force_login(OrganiserFactory())
    response = client.get(url)
    assert response.status_code == ORGANISER_GET_STATUS.get(route.name, 200)


@pytest.mark.parametrize("route", ORGANISER_ROUTES, ids=lambda r: r.name)
def test_a_post_to_an_organiser_page_by_anyone_else_changes_nothing(client, world, route):
    url = _url(route, world)
    payload = FORMS.get(route.name, lambda w: {})
    before = _database()

    response = client.post(url, payload(world))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert _database() == before

    for user in (world["assessor"], _crowd_worker()):
        client.force_login(user)
        before = _database()
        _assert_forbidden_page(client.post(url, payload(world)))
        assert _database() == before


@pytest.mark.parametrize("name", FORMS_THAT_WRITE)
def test_an_organisers_post_of_each_form_changes_the_database(client, world, name):
    route = next(r for r in ORGANISER_ROUTES if r.name == name)
    client.force_login(OrganiserFactory())
    before = _database()

    response = client.post(_url(route, world), FORMS[name](world))

    assert response.status_code == 302, response.content.decode()[:2000]
    assert _database() != before
