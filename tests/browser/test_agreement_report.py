"""The agreement report page in real Chromium: the heatmap renders, every download answers in its format."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Judge
from tests.background import IMMEDIATE
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """The live server runs a task as it is queued, so a stored report's first view computes it and shows
    the figures (tests/judging/agreement/test_stored_pages.py follows the queue)."""
    settings.TASKS = IMMEDIATE


GRADES_A = [0, 1, 2, 3, 4, 2, 1, 0, 3, 2, 2, 1]
GRADES_B = [0, 2, 2, 3, 3, 1, 1, 0, 4, 2, 0, 1]
TOPICS = ['<img id="bad" src=x>', "<i>2</i>", "3"]


@pytest.fixture
def report_url():
    collection = CollectionFactory(name="report-c")
    turns = [TurnFactory(topic=TopicFactory(collection=collection, number=number)) for number in TOPICS]
    a = JudgeFactory(name="nist <b>qrels</b>")
    b = JudgeFactory(name="gpt-4o", kind=Judge.Kind.LLM)
    for i, (ga, gb) in enumerate(zip(GRADES_A, GRADES_B, strict=True)):
        RelevanceJudgmentFactory(judge=a, turn=turns[i % 3], passage_id=f"p{i}", grade=ga)
        RelevanceJudgmentFactory(judge=b, turn=turns[i % 3], passage_id=f"p{i}", grade=gb)
    OrganiserFactory(username="org")
    query = urlencode({"task": "relevance", "a": a.name, "b": b.name, "threshold": "2"})
    return f"{reverse('judging:agreement-report', args=[collection.name])}?{query}"


def test_the_report_page_renders_the_heatmap_image(page, login, report_url):
    login("org")
    response = page.goto(report_url)
    assert response.status == 200

    heatmap = page.locator('img.chart[alt="confusion matrix heatmap"]')
    heatmap.wait_for()
    # The browser fetched and decoded the SVG: a broken image has no natural size.
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=heatmap.element_handle())
    assert heatmap.evaluate("img => img.naturalWidth") > 100
    assert page.locator("#fig-kappa").inner_text() == f"{cohen_kappa_score(GRADES_A, GRADES_B):.3f}"


def test_collection_text_shows_as_text_on_the_report(page, login, report_url):
    login("org")
    page.goto(report_url)

    assert "nist <b>qrels</b> (A) vs gpt-4o (B)" in page.locator("section.card h2").inner_text()
    topics = page.locator("table.per-topic tbody tr td:first-child").all_inner_texts()
    assert sorted(topics) == sorted(TOPICS)
    assert page.locator("#bad").count() == 0
    assert page.locator("section.card b").count() == 0


@pytest.mark.parametrize(
    ("link", "content_type", "magic"),
    [
        ("JSON", "application/json", b"{"),
        ("CSV", "text/csv", b"task,judge_a,judge_b,topic,"),
        ("confusion CSV", "text/csv", b"nist <b>qrels</b> \\ gpt-4o,0,1,2,3,4"),
        ("heatmap SVG", "image/svg+xml", b"<?xml"),
        ("heatmap PNG", "image/png", b"\x89PNG\r\n\x1a\n"),
    ],
)
def test_each_download_link_answers_200_with_its_content_type(
    page, login, report_url, link, content_type, magic
):
    login("org")
    page.goto(report_url)

    href = page.locator("p.downloads").get_by_role("link", name=link, exact=True).get_attribute("href")
    # page.request shares the organiser's session cookie, as a click on the link would.
    answer = page.request.get(href)

    assert answer.status == 200
    assert answer.headers["content-type"].split(";")[0] == content_type
    assert answer.headers["content-disposition"].startswith("attachment;")
    assert answer.body().lstrip().startswith(magic)
    if content_type == "application/json":
        data = json.loads(answer.body())
        assert data["judges"] == ["nist <b>qrels</b>", "gpt-4o"]
        assert data["cohen_kappa"] == pytest.approx(cohen_kappa_score(GRADES_A, GRADES_B))


def test_a_download_link_followed_by_the_browser_saves_the_file(page, login, report_url):
    login("org")
    page.goto(report_url)

    with page.expect_download() as info:
        page.locator("p.downloads").get_by_role("link", name="heatmap PNG", exact=True).click()
    download = info.value

    assert download.suggested_filename == "report-c-relevance-agreement-confusion.png"
    with open(download.path(), "rb") as saved:
        assert saved.read(8) == b"\x89PNG\r\n\x1a\n"
