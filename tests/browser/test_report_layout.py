"""The agreement reports in real Chromium at the widths organisers print and read them on: every table stays
inside its card (a wide table wraps its cells, and scrolls inside the card only on a narrow window)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from annotation.models import Judge
from tests.background import IMMEDIATE
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """The live server runs a task as it is queued, so a stored report's first view computes it and shows
    the figures (tests/judging/agreement/test_stored_pages.py follows the queue)."""
    settings.TASKS = IMMEDIATE


# Judge and run names as long as real ones: the tables used to grow past their cards on these.
JUDGES = [
    ("assessor:organiser-anna-lindqvist", Judge.Kind.ASSESSOR),
    ("llm:gpt-4o-2024-08-06:relevance-prompt-v3", Judge.Kind.LLM),
    ("llm:llama-3.1-70b-instruct:relevance-prompt-v3", Judge.Kind.LLM),
    ("nist-qrels-ikat-2024-final", Judge.Kind.IMPORTED),
]
RUNS = [
    "ikat24-bm25-monot5-gpt4o-rag-rewrite",
    "ikat24-splade-rankllama-llama3-rag",
    "ikat24-dense-colbert-mistral-rag",
]
PASSAGES = [f"clueweb22-en0034-{i:02d}-{i * 7:05d}:{i}" for i in range(10)]

OVERFLOWS = """() => [...document.querySelectorAll('table')].flatMap(table => {
  const card = table.closest('section');
  const t = table.getBoundingClientRect(), c = card.getBoundingClientRect();
  return (t.left < c.left - 0.5 || t.right > c.right + 0.5)
    ? [`${card.querySelector('h2, h3')?.textContent}: table ${t.left}-${t.right}, card ${c.left}-${c.right}`]
    : [];
})"""

OVERLAPS = """() => {
  const cards = [...document.querySelectorAll('section')].map(s => s.getBoundingClientRect());
  const hits = [];
  cards.forEach((a, i) => cards.slice(i + 1).forEach(b => {
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
      hits.push([a.left, a.top, b.left, b.top]);
  }));
  return hits;
}"""


@pytest.fixture
def campaign():
    collection = CollectionFactory(name="ikat-2024-report")
    turns = [TurnFactory(topic=TopicFactory(collection=collection, number=str(n))) for n in (1, 2, 3)]
    judges = [
        AssessorJudgeFactory(name=name) if kind == Judge.Kind.ASSESSOR else JudgeFactory(name=name, kind=kind)
        for name, kind in JUDGES
    ]
    for j, judge in enumerate(judges):
        for t, turn in enumerate(turns):
            for p, passage in enumerate(PASSAGES):
                RelevanceJudgmentFactory(
                    judge=judge, turn=turn, passage_id=passage, grade=(p + t + j * p) % 5
                )
    for r, name in enumerate(RUNS):
        run = RunFactory(collection=collection, name=name)
        for turn in turns:
            RankingFactory(run=run, turn=turn, passage_ids=PASSAGES[r:] + PASSAGES[:r])
    OrganiserFactory(username="org")
    return collection, judges


@pytest.mark.parametrize("width", [1280, 1600])
def test_no_campaign_report_table_leaves_its_card(page, login, campaign, width):
    collection, _judges = campaign
    page.set_viewport_size({"width": width, "height": 900})
    login("org")
    response = page.goto(reverse("judging:agreement-campaign", args=[collection.name]))
    assert response.status == 200

    assert page.locator("section[data-task=relevance] tbody tr").count() == 2 * 6
    assert page.evaluate(OVERFLOWS) == []
    assert page.evaluate(OVERLAPS) == []
    # Nothing runs past the window either.
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", [1280, 1600])
def test_no_comparison_or_ranking_table_leaves_its_card(page, login, campaign, width):
    collection, judges = campaign
    page.set_viewport_size({"width": width, "height": 900})
    login("org")
    query = urlencode({"task": "relevance", "a": judges[0].name, "b": judges[1].name})
    response = page.goto(f"{reverse('judging:agreement-report', args=[collection.name])}?{query}")
    assert response.status == 200
    assert page.locator("table.per-topic tbody tr").count() == 3
    assert page.evaluate(OVERFLOWS) == []

    query = urlencode({"measure": "ndcg@5", "a": judges[0].name, "b": judges[3].name})
    response = page.goto(f"{reverse('judging:agreement-ranking', args=[collection.name])}?{query}")
    assert response.status == 200
    assert page.locator("section.card table tbody tr").count() == len(RUNS)
    assert page.evaluate(OVERFLOWS) == []


def test_the_report_pages_need_no_inline_style_under_a_strict_policy(page, login, campaign, settings):
    """Under style-src 'self' alone, the browser refuses nothing on these pages and the sheets apply."""
    collection, judges = campaign
    settings.CONTENT_SECURITY_POLICY = {
        "DIRECTIVES": {**settings.CONTENT_SECURITY_POLICY["DIRECTIVES"], "style-src": ["'self'"]}
    }
    refused = []
    page.on(
        "console",
        lambda message: refused.append(message.text) if "Content Security" in message.text else None,
    )
    login("org")
    query = urlencode({"task": "relevance", "a": judges[0].name, "b": judges[1].name})
    for url in [
        reverse("judging:agreement-campaign", args=[collection.name]),
        f"{reverse('judging:agreement-campaign', args=[collection.name])}?format=html",
        f"{reverse('judging:agreement-report', args=[collection.name])}?{query}",
        f"{reverse('judging:agreement-ranking', args=[collection.name])}?measure=ndcg%405&a={judges[0].name}&b={judges[3].name}",
    ]:
        response = page.goto(url)
        assert response.status == 200
        assert "style-src 'self';" in response.headers["content-security-policy"] + ";"
        page.wait_for_load_state("networkidle")
    assert refused == []
    page.goto(reverse("judging:agreement-campaign", args=[collection.name]))
    wide = page.locator("section.wide").first
    assert wide.evaluate("s => getComputedStyle(s).gridColumnStart") == "1"
