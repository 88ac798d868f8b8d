"""The campaign report and the live agreement with many judges: the page shows each section's pairs a page
at a time (most shared units first, with the section's total and links to its other pages) and the live
JSON a page of assessors (most labels first, with their total), both at the same cost whatever the
judges; the downloads (JSON, the whole report as HTML) still give every pair."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Judge
from judging.agreement.campaign_page import PAIRS_PER_PAGE
from judging.agreement.live import ASSESSORS_PER_PAGE
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]


def _judged(judges: int, prefix: str = "judge"):
    """`judges` judges on one turn, judge i grading the first 3 + i passages: the pair (i, j) shares
    3 + min(i, j) units, so the pairs' order by shared units is known."""
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    built = [JudgeFactory(name=f"{prefix}-{i:02d}") for i in range(judges)]
    for i, judge in enumerate(built):
        for p in range(3 + i):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=f"p{p}", grade=(p * (i + 1)) % 5)
    return collection


def _pairs(html: str, section: int) -> list[tuple[str, str, int]]:
    body = re.search(rf'id="section-{section}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [(a, b, int(n)) for a, b, n in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(\d+)</td>", body)]


def test_the_campaign_page_shows_each_sections_pairs_a_page_at_a_time_most_shared_units_first(client):
    collection = _judged(9)  # 36 pairs
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-campaign", args=[collection.name])

    first = client.get(url).content.decode()
    second = client.get(url, {"pairs-0": "2"}).content.decode()
    past = client.get(url, {"pairs-0": "9", "pairs-1": "2"}).content.decode()
    unreadable = client.get(url, {"pairs-0": "two"}).content.decode()
    whole = client.get(url, {"format": "html"})
    data = client.get(url, {"format": "json"}).json()

    every = [(*row["judges"], row["n"]) for row in data["sections"][0]["rows"]]
    assert len(every) == 36
    assert [n for _a, _b, n in every] == sorted((n for _a, _b, n in every), reverse=True)
    assert every[0] == ("judge-07", "judge-08", 10)
    assert _pairs(first, 0) == every[:PAIRS_PER_PAGE]
    assert _pairs(second, 0) == every[PAIRS_PER_PAGE:]
    # The other sections keep their first page; each section says its total and links to its pages.
    assert _pairs(second, 1) == _pairs(first, 1)
    # A page past the last shows the last; a page number that is none shows the first.
    binary = [(*row["judges"], row["n"]) for row in data["sections"][1]["rows"]]
    assert _pairs(past, 0) == every[PAIRS_PER_PAGE:] and _pairs(past, 1) == binary[PAIRS_PER_PAGE:]
    assert _pairs(unreadable, 0) == every[:PAIRS_PER_PAGE]
    assert "36 pairs of judges sharing units." in first
    assert "Pairs 1–25 of 36, page 1 of 2" in first
    assert 'href="?pairs-0=2#section-0"' in first
    # The whole report gives every pair of every section, to print, its style sheet linked (the site's
    # content security policy refuses an inline one).
    html = whole.content.decode()
    assert whole.status_code == 200 and "<style" not in html and "report.css" in html and "data-print" in html
    assert len(re.findall(r"<tr><td>judge-", html)) == 36 * len(data["sections"][:2])
    assert 'href="?format=html"' in first and 'href="?format=json"' in first


def test_the_campaign_page_makes_as_many_queries_and_draws_as_many_rows_whatever_the_judges(client):
    client.force_login(OrganiserFactory())
    shown = []
    for judges in (3, 12):
        url = reverse("judging:agreement-campaign", args=[_judged(judges, prefix=f"j{judges}").name])
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        shown.append((len(queries), len(_pairs(html, 0))))

    # A later page of a section is read with the rest, in the same query.
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url, {"pairs-0": "3"}).content.decode()
    shown.append((len(queries), len(_pairs(html, 0))))

    # 66 pairs: 25, 25, then 16.
    assert shown == [(shown[0][0], 3), (shown[0][0], PAIRS_PER_PAGE), (shown[0][0], 66 - 2 * PAIRS_PER_PAGE)]


def _assessors(count: int, prefix: str = "a"):
    """`count` assessors and an LLM judge on one turn; assessor i graded 1 + i passages."""
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    llm = JudgeFactory(name=f"{prefix}-gpt-4o", kind=Judge.Kind.LLM)
    for p in range(count):
        RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=f"p{p}", grade=p % 5)
    for i in range(count):
        assessor = AssessorJudgeFactory(user=UserFactory(username=f"{prefix}{i:02d}"))
        for p in range(1 + i):
            RelevanceJudgmentFactory(judge=assessor, turn=turn, passage_id=f"p{p}", grade=p % 5)
    return collection


def test_the_live_json_gives_a_page_of_assessors_most_labels_first_and_their_total(client):
    collection = _assessors(ASSESSORS_PER_PAGE + 5)
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-live-data", args=[collection.name])

    first = client.get(url).json()
    second = client.get(url, {"page": 2}).json()
    past = client.get(url, {"page": 3}).json()

    assert (first["total"], first["pages"], first["per_page"], first["current"]) == (25, 2, 20, True)
    assert [row["labels"] for row in first["assessors"]] == list(range(25, 5, -1))
    assert [row["judge"] for row in second["assessors"]] == [f"assessor:a{i:02d}" for i in range(4, -1, -1)]
    assert second["page"] == 2 and first["llm_judges"] == ["a-gpt-4o"]
    assert past["assessors"] == [] and past["total"] == 25
    assert client.get(url, {"page": 0}).status_code == 400


def test_the_live_json_costs_the_same_whatever_the_assessors(client):
    client.force_login(OrganiserFactory())
    costs = []
    for count in (2, ASSESSORS_PER_PAGE * 2):
        url = reverse("judging:agreement-live-data", args=[_assessors(count, prefix=f"a{count}-").name])
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            data = client.get(url).json()
        costs.append((len(queries), len(data["assessors"])))

    assert costs == [(costs[0][0], 2), (costs[0][0], ASSESSORS_PER_PAGE)]
