"""Every page of the site, read from the URL configuration and filled in from a built collection.

The page-budget test and the page bench both walk these pages, as an organiser and as an assessor, and
count each page's queries and server time. A route is walked unless SKIPPED says why it is not a page
(posts, downloads, the machinery); a new route is walked as soon as it exists, and fails the test until
`_argument` knows what its URL parameters name.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Collection, Judge, Nugget, TopicWork, WorkSlot
from console.models import ImportJob
from crowd.models import CrowdCampaign
from judging.models import JudgeJob

# Routes that are not pages a person opens, and why they are not walked.
SKIPPED = {
    "adjudication-start": "an adjudicator's own queue item redirect; the walk's world has no adjudication "
    "(tests/annotation/relevance/test_adjudication.py reads its pages)",
    "adjudication-item": "an adjudicator's own pair; the walk's world has no adjudication "
    "(tests/annotation/relevance/test_adjudication.py reads its pages)",
    "login": "the login form (no data)",
    "logout": "a POST",
    "console-welcome": "an invitation's one-time link",
    "healthz": "load balancer probe",
    "readyz": "load balancer probe",
    "api-docs": "static Swagger page",
    "api-schema": "the OpenAPI document, built from code, not data",
    "account-token-reset": "a POST",
    "api-token": "a POST",
    "console-login-unlock": "a POST",
    "relevance-api-grade": "a POST",
    "nuggets-create": "a POST",
    "nuggets-update": "a POST",
    "nuggets-delete": "a POST",
    "nuggets-duplicate": "a POST",
    "console-export": "a download (its size is the data's)",
    "judging:agreement-download": "a download (its size is the data's)",
    "judging:agreement-ranking-download": "a download (its size is the data's)",
    "judging:nugget-scores-download": "a download (its size is the data's)",
    "judging:quality-runs-download": "a download (its size is the data's)",
    "crowd:batch-take": "a crowd worker's POST",
    "crowd:link-take": "a crowd worker's signed link",
    "crowd:hit": "MTurk's frame, with a signed token",
    "crowd:study": "a panel participant's entry link",
    "rag-nuggets-edit": "a POST",
    # The real-size build hands out no nugget work; tests/annotation/rag_nuggets/test_rag_nugget_pages.py pins the
    # page's queries at two sizes instead.
    "rag-nuggets-page": "needs nugget work, which the real-size build does not hand out",
}


@dataclass(frozen=True)
class Route:
    name: str
    params: tuple[str, ...]
    view: object = None


@dataclass(frozen=True)
class PageResult:
    route: str
    url: str
    who: str
    status: int
    queries: int
    ms: float


def routes(
    resolver: URLResolver | None = None, namespace: str = "", params: tuple[str, ...] = ()
) -> Iterator[Route]:
    """Every named route of the URL configuration (Django's admin aside), with its URL parameters."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        converters = tuple(getattr(entry.pattern, "converters", {}))
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin":
                continue
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from routes(entry, inner, params + converters)
        elif isinstance(entry, URLPattern) and entry.name:
            yield Route(f"{namespace}{entry.name}", params + converters, entry.callback)


@dataclass(frozen=True)
class World:
    """The objects a built collection's pages are about, seen by one organiser and one assessor."""

    collection: Collection
    campaign: CrowdCampaign
    assessor: User
    slot: WorkSlot
    support: TopicWork
    import_job: ImportJob
    judge_job: JudgeJob
    nugget: Nugget

    @classmethod
    def of(cls, collection: Collection, assessor: User) -> World:
        judge = Judge.objects.filter(name__startswith=collection.name, kind=Judge.Kind.LLM).first()
        slot = WorkSlot.objects.filter(
            assessor=assessor, unit__assignment__pool__collection=collection
        ).first()
        assert judge is not None and slot is not None, "build the collection with realsize_build first"
        import_job, _ = ImportJob.objects.get_or_create(
            collection=collection,
            kind="qrels",
            file_name="walk.qrels",
            defaults={"stored_path": ""},
        )
        judge_job, _ = JudgeJob.objects.get_or_create(
            collection=collection, judge=judge, task=JudgeJob.Task.RELEVANCE, model="m", prompt_version="v"
        )
        return cls(
            collection=collection,
            campaign=CrowdCampaign.objects.filter(collection=collection).order_by("pk").first(),  # type: ignore[arg-type]
            assessor=assessor,
            slot=slot,
            support=TopicWork.objects.filter(
                kind=TopicWork.Kind.SUPPORT, user=assessor, topic__collection=collection
            ).first(),  # type: ignore[arg-type]
            import_job=import_job,
            judge_job=judge_job,
            nugget=Nugget.objects.filter(turn__collection=collection).order_by("pk").first(),  # type: ignore[arg-type]
        )


def _argument(route: str, param: str, world: World) -> str | None:
    """The value of one URL parameter of a route in `world`, or None when the route is not known here."""
    collection = world.collection
    turn_pk = world.slot.unit.turn_pks[0]
    values: dict[str, Any] = {
        "name": world.campaign.name if route.startswith("crowd:") else collection.name,
        "collection": collection.name,
        "pool": world.slot.unit.assignment.pool.name,
        "run": collection.runs.order_by("name").first().name,  # type: ignore[union-attr]
        "assignment_pk": world.slot.unit.assignment_id,
        "slot_pk": world.slot.pk,
        "turn_pk": turn_pk,
        "index": 1,
        "turn_id": world.nugget.turn.turn_id,
        "assignment_id": world.support.pk,
        "position": 1,
        "username": world.assessor.get_username(),
    }
    if param == "pk":
        return str(world.import_job.pk if route.startswith("console-import") else world.judge_job.pk)
    if param in values:
        return str(values[param])
    return None


def pages(world: World) -> list[tuple[Route, str]]:
    """Each walked route with its URL; a route whose parameters `_argument` cannot fill raises."""
    found = []
    for route in sorted(routes(), key=lambda r: r.name):
        if route.name in SKIPPED:
            continue
        kwargs = {p: _argument(route.name, p, world) for p in route.params}
        unknown = [p for p, v in kwargs.items() if v is None]
        if unknown:
            raise LookupError(f"{route.name}: say in devtools/pagewalk.py what {unknown} name, or skip it")
        found.append((route, reverse(route.name, kwargs=kwargs)))
    return found


def page_get(client: Client, url: str, *, route: str, who: str) -> PageResult:
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
        elapsed = time.perf_counter() - started
    return PageResult(route, url, who, response.status_code, len(queries), elapsed * 1000)


def walk(world: World, organiser: User) -> list[PageResult]:
    """Every page, as the organiser and as the world's assessor, each read twice and measured the second
    time: a first visit may make what later visits find (a session, a crowd worker's record)."""
    results = []
    for who, user in (("organiser", organiser), ("assessor", world.assessor)):
        client = Client()
        client.force_login(user)
        for route, url in pages(world):
            page_get(client, url, route=route.name, who=who)
            results.append(page_get(client, url, route=route.name, who=who))
    return results
