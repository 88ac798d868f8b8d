"""The site on a phone (390 px wide, an iPhone 12 to 15): the top bar stays one row and nothing runs past the
window, whatever the page holds; wide tables scroll inside their card instead."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Passage, PoolEntry
from annotation.relevance.services import work_lease
from tests.factories import OrganiserFactory, relevance_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

# The top bar's links, buttons and brand, each as [top, bottom] on the screen.
TOPBAR_ITEMS = """() => [...document.querySelectorAll('.topbar a, .topbar button')]
  .map(e => e.getBoundingClientRect()).map(r => [r.top, r.bottom])"""

# What sticks out past the window's right edge, named so a failure says where.
PAST_THE_EDGE = """() => [...document.querySelectorAll('body *')].flatMap(e => {
  const r = e.getBoundingClientRect();
  return r.right > innerWidth + 0.5 && !e.closest('.table, .topbar nav')
    ? [`${e.tagName.toLowerCase()}#${e.id}.${e.className}: right ${r.right}`] : [];
})"""

# Tables whose box runs past the content edge of their card (or of the page when they sit in no card).
TABLES_OUT_OF_CARD = """() => [...document.querySelectorAll('table')].flatMap(t => {
  const box = t.closest('.card, main'), s = getComputedStyle(box), c = box.getBoundingClientRect();
  const right = c.right - parseFloat(s.paddingRight) - parseFloat(s.borderRightWidth);
  const r = t.getBoundingClientRect();
  return r.right > right + 0.5 ? [`table#${t.id}.${t.className}: right ${r.right}, card ${right}`] : [];
})"""


@pytest.fixture
def olga():
    """An organiser (the longest top bar) who also judges, holding a unit of a campaign."""
    olga = OrganiserFactory(username="olga-lindqvist-organiser")
    assignment = relevance_campaign(assessors=[olga], n_turns=3, n_passages=2, unit_kind="conversation")
    work_lease(assignment=assignment, user=olga)
    return assignment


def _assert_fits_a_phone(page, url):
    response = page.goto(url)
    assert response.status == 200
    page.wait_for_load_state("networkidle")

    items = page.evaluate(TOPBAR_ITEMS)
    assert len(items) >= 10
    # One row: every item shares the row of the first one.
    first_top, first_bottom = items[0]
    assert all(top < first_bottom and bottom > first_top for top, bottom in items), items
    bar = page.locator(".topbar").bounding_box()
    assert bar["height"] < 2 * (first_bottom - first_top) + 20
    assert page.evaluate(PAST_THE_EDGE) == []
    assert page.evaluate(TABLES_OUT_OF_CARD) == []
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")


def test_it_fits_the_home_queue_and_console_pages_on_a_phone(page, login, olga):
    page.set_viewport_size(PHONE)
    login("olga-lindqvist-organiser")
    collection = olga.pool.collection

    for url in [
        reverse("home"),
        reverse("relevance-queue"),
        reverse("console-collection", args=[collection.name]),
        reverse("console-dashboard", args=[collection.name]),
    ]:
        _assert_fits_a_phone(page, url)


def test_it_scrolls_the_queue_table_inside_its_card(page, login, olga):
    page.set_viewport_size(PHONE)
    login("olga-lindqvist-organiser")
    response = page.goto(reverse("relevance-queue"))
    assert response.status == 200

    table = page.locator("table.units")
    assert table.locator("tbody tr").count() == 3
    assert page.evaluate(TABLES_OUT_OF_CARD) == []
    # Its columns need more than the card's width: it scrolls sideways within the card.
    assert table.evaluate("t => t.scrollWidth > t.clientWidth")
    table.evaluate("t => { t.scrollLeft = 1000; }")
    assert table.evaluate("t => t.scrollLeft") > 0


def test_it_shows_a_missing_passage_in_the_site_font(page, login, olga):
    # The pool names the passage but the collection lost its text (a passages file imported without it).
    entry = PoolEntry.objects.filter(pool=olga.pool).order_by("turn__position", "order").first()
    Passage.objects.filter(collection=olga.pool.collection, passage_id=entry.passage_id).delete()
    login("olga-lindqvist-organiser")
    page.goto(reverse("relevance-queue"))
    page.click(f"#start-{olga.pk}")
    page.wait_for_selector("#passage-text")

    missing = page.locator("#passage-text")
    assert missing.inner_text() == "The collection does not hold this passage's text."
    body_font = page.evaluate("getComputedStyle(document.body).fontFamily")
    assert missing.evaluate("e => getComputedStyle(e).fontFamily") == body_font
