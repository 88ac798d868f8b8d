"""The assessor-quality flow in real Chromium, the organiser on the pages and everyone else on the keyboard
alone: a reference judge's qrels uploaded, relevance work with gold planted at 10% from them, two
assessors who grade their units (one like the reference, one badly), the quality dashboard with each
assessor's gold accuracy, a pause and a resume, an adjudication of the pairs they graded two or more
grades apart, the adjudicator's queue, and the adjudicated judge's qrels downloaded.

The collection (one conversation of two turns, a run and its passages, the pool) is made outside the
pages, as are the accounts: the organiser's tour (test_organiser_tour.py) already builds them by page.

With ASSAY_TOUR_SCREENSHOTS=1 the steps save docs/tour/quality/NN-step.png (1280x800), which the docs'
page docs/quality-tour.md shows; without it the test writes nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.models import AssessorPause, GoldPair
from annotation.relevance.pooling import pool_build
from tests.background import IMMEDIATE
from tests.factories import (
    CollectionFactory,
    OrganiserFactory,
    PassageFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """The live server runs a task as it is queued, so the quality page's stored report is computed on its
    first view and the tour reads its figures (tests/judging/quality/test_stored_pages.py follows the queue)."""
    settings.TASKS = IMMEDIATE


PASSWORD = "pw-for-tests-123"
TOUR = Path(__file__).resolve().parents[2] / "docs" / "tour" / "quality"
VIEWPORT = {"width": 1280, "height": 800}
DEPTH = 9
SPARE = 2  # passages per turn the reference graded beyond the pool: the gold candidates
# The reference's grades, per turn: the pooled passages', then the spare ones'.
REFERENCE = [[4, 0, 2, 1, 3, 4, 2, 0, 1, 3, 4], [1, 4, 3, 0, 2, 2, 4, 1, 0, 2, 3]]
ADJUDICATOR_GRADE = 2


class Tour:
    """Numbered screenshots, written only when ASSAY_TOUR_SCREENSHOTS=1."""

    def __init__(self) -> None:
        self.enabled = os.environ.get("ASSAY_TOUR_SCREENSHOTS") == "1"
        self.names: list[str] = []
        if self.enabled:
            TOUR.mkdir(parents=True, exist_ok=True)

    def shot(self, page, step: str) -> None:
        self.names.append(f"{len(self.names) + 1:02d}-{step}.png")
        if self.enabled:
            path = TOUR / self.names[-1]
            page.screenshot(path=str(path), full_page=False)
            # A 64-colour palette keeps the committed pictures small; pages are flat colours and text.
            from PIL import Image

            with Image.open(path) as picture:
                small = picture.convert("RGB").quantize(colors=64)
            small.save(path, optimize=True)


def _browser_of(browser, base_url: str, username: str):
    context = browser.new_context(base_url=base_url, viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("#login-submit")
    page.wait_for_url(re.compile(r"/$"))
    return context, page


def _collection(tmp_path: Path):
    """One conversation of two turns, each pooling a run's top nine passages; the reference's qrels also
    grade two passages beyond the pool per turn. Returns the qrels file and its grades by pair."""
    collection = CollectionFactory(name="quality")
    topic = TopicFactory(collection=collection)
    run = RunFactory(collection=collection)
    reference: dict[tuple[str, str], int] = {}
    for position, grades in enumerate(REFERENCE, start=1):
        turn = TurnFactory(topic=topic, position=position)
        ids = [PassageFactory(collection=collection).passage_id for _ in grades]
        RankingFactory(run=run, turn=turn, passage_ids=ids[:DEPTH])
        reference.update({(turn.turn_id, pid): grade for pid, grade in zip(ids, grades, strict=True)})
    pool_build(collection=collection, name="pool", depth=DEPTH)
    qrels = tmp_path / "reference.qrels"
    qrels.write_text("".join(f"{qid} 0 {pid} {grade}\n" for (qid, pid), grade in reference.items()))
    return qrels, reference


def _badly(pair: tuple[str, str], grade: int) -> int:
    """The bad assessor: one grade up, 4 wrapping to 0, except on the reference's 2s (one spare passage)."""
    return grade if grade == 2 else (grade + 1) % 5


def _grade_units(browser, base_url, username, reference, grade_of, tour: Tour | None) -> dict:
    """The assessor takes units until none is left and grades each passage with a digit and Enter."""
    context, page = _browser_of(browser, base_url, username)
    given: dict[tuple[str, str], int] = {}
    while True:
        page.goto("/relevance/")
        start = page.locator("button[id^=start-]")
        if not start.count():
            break
        expect(start).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("#grade-form")).to_be_visible()
        index = 0
        while True:
            page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
            total = int(re.search(r"passage \d+ of (\d+)", page.locator("#progress").inner_text()).group(1))  # type: ignore[union-attr]
            passage = page.locator("#passage-id").inner_text()
            pair = next(p for p in reference if p[1] == passage)
            given[pair] = grade_of(pair, reference[pair])
            page.keyboard.press(str(given[pair]))
            if tour and index == 1 and len(given) == 2:
                tour.shot(page, "assessor-grades")
            page.keyboard.press("Enter")
            index += 1
            if index == total:
                expect(page).to_have_url(re.compile(r"/relevance/$"))
                break
            expect(page.locator("#passage-id")).not_to_have_text(passage)
    expect(page.locator(".units")).to_contain_text("complete")
    context.close()
    return given


def test_an_organiser_checks_assessors_with_gold_and_adjudicates_their_disputes(
    browser, live_server, tmp_path
):
    qrels, reference = _collection(tmp_path)
    OrganiserFactory(username="olga")
    for username in ("ana", "ben", "cy"):
        UserFactory(username=username)
    tour = Tour()
    errors: list[str] = []
    context, page = _browser_of(browser, live_server.url, "olga")
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # 1. The reference judge's qrels by upload, and the work with gold planted at 10% from them.
    page.goto("/console/collections/quality/")
    page.select_option("#id_kind", "qrels")
    page.fill("#id_judge", "nist")
    page.set_input_files("#id_file", str(qrels))
    page.click("#upload-submit")
    page.wait_for_selector("#import-done", timeout=30_000)
    page.goto("/console/collections/quality/work/")
    page.select_option("#id_pool", page.locator("#id_pool option", has_text="pool").get_attribute("value"))
    page.fill("#id_name", "graded")
    for username in ("ana", "ben"):
        page.locator("#relevance-work-form label", has_text=username).locator("input").check()
    page.fill("#id_redundancy", "2")
    page.uncheck("#id_with_ptkb")
    page.select_option("#id_gold_judge", "nist")
    page.fill("#id_gold_share", "0.1")
    tour.shot(page, "work-with-gold")
    page.click("#relevance-assign")
    page.wait_for_url("**/console/collections/quality/work/")
    expect(page.locator("#assignments tbody tr").first).to_contain_text("graded")
    gold = {
        (turn_id, pid): grade
        for turn_id, pid, grade in GoldPair.objects.values_list("turn__turn_id", "passage_id", "grade")
    }
    assert len(gold) == 2  # 18 pooled pairs: 2 gold make 10% of the 20 each assessor sees
    assert all(reference[pair] == grade for pair, grade in gold.items())

    # 2. Two assessors grade everything with the keyboard: ana like the reference, ben badly.
    ana = _grade_units(browser, live_server.url, "ana", reference, lambda pair, grade: grade, tour)
    ben = _grade_units(browser, live_server.url, "ben", reference, _badly, None)
    assert len(ana) == len(ben) == len(reference) - len(REFERENCE) * SPARE + len(gold)

    # 3. The dashboard: each assessor's gold accuracy, as counted here.
    page.goto("/judging/quality/quality/")
    accuracy: dict[str, float] = {}
    for username, given in (("ana", ana), ("ben", ben)):
        row = page.locator(f"#assessor-{username}")
        exact = sum(given[pair] == grade for pair, grade in gold.items()) / len(gold)
        within = sum(abs(given[pair] - grade) <= 1 for pair, grade in gold.items()) / len(gold)
        expect(row.locator(".gold-n")).to_have_text(str(len(gold)))
        expect(row.locator(".gold-exact")).to_contain_text(f"{exact:.3f} [")
        expect(row.locator(".gold-within-one")).to_contain_text(f"{within:.3f} [")
        accuracy[username] = exact
    assert accuracy["ana"] == 1 and accuracy["ben"] <= 0.5
    tour.shot(page, "dashboard")

    # 4. Pause ben from the dashboard, and resume.
    page.click("#pause-ben")
    page.wait_for_url("**/judging/quality/quality/")
    expect(page.locator("#assessor-ben")).to_contain_text("paused")
    assert AssessorPause.objects.filter(user__username="ben").exists()
    tour.shot(page, "paused")
    page.click("#resume-ben")
    page.wait_for_url("**/judging/quality/quality/")
    expect(page.locator("#resume-ben")).to_have_count(0)
    expect(page.locator("#pause-ben")).to_be_visible()
    assert not AssessorPause.objects.filter(user__username="ben").exists()

    # 5. The pairs the two graded two or more apart go to cy's queue.
    pooled = [pair for pair in ana if pair not in gold]
    disputed = {pair for pair in pooled if abs(ana[pair] - ben[pair]) >= 2}
    agreed = {pair: min(ana[pair], ben[pair]) for pair in pooled if pair not in disputed}
    assert disputed and agreed
    page.goto("/relevance/adjudication/new/quality/")
    for username in ("ana", "ben"):
        page.locator("#adjudication-form label", has_text=f"assessor:{username}").locator("input").check()
    page.fill("#id_min_difference", "2")
    page.select_option("#id_adjudicator", "cy")
    page.fill("#id_name", "adjudicated")
    tour.shot(page, "adjudication-form")
    page.click("#assign-adjudication")
    page.wait_for_url("**/relevance/adjudication/new/quality/")
    expect(page.locator("#adjudications tbody tr")).to_contain_text("adjudicated")

    # 6. cy adjudicates with the keyboard.
    cy_context, cy = _browser_of(browser, live_server.url, "cy")
    cy.goto("/relevance/adjudication/")
    expect(cy.locator("button[id^=start-]")).to_be_focused()
    cy.keyboard.press("Enter")
    adjudicated: dict[tuple[str, str], int] = {}
    for _ in disputed:
        cy.wait_for_selector("html[data-hotkeys-ready]", state="attached")
        passage = cy.locator("#passage-id").inner_text()
        pair = next(p for p in disputed if p[1] == passage)
        assert pair not in adjudicated
        cy.keyboard.press(str(ADJUDICATOR_GRADE))
        if not adjudicated:
            tour.shot(cy, "adjudicator-grades")
        adjudicated[pair] = ADJUDICATOR_GRADE
        cy.keyboard.press("Enter")
        if len(adjudicated) < len(disputed):
            expect(cy.locator("#passage-id")).not_to_have_text(passage)
    expect(cy).to_have_url(re.compile(r"/relevance/adjudication/$"))
    expect(cy.locator("body")).to_contain_text("Finished")
    cy_context.close()

    # 7. The adjudicated judge's qrels: the agreed grades plus cy's.
    page.goto("/console/collections/quality/exports/")
    page.select_option("#export-qrels select[name=judge]", "adjudicated")
    with page.expect_download() as download:
        page.click("#export-qrels button[type=submit]")
    lines = Path(download.value.path()).read_text().splitlines()
    expected = {f"{qid} 0 {pid} {grade}" for (qid, pid), grade in {**agreed, **adjudicated}.items()}
    assert {" ".join(line.split()) for line in lines} == expected
    context.close()

    assert errors == []
    # The docs' page shows exactly these steps, in this order.
    shown = (TOUR.parents[1] / "quality-tour.md").read_text()
    assert re.findall(r"\]\(tour/quality/([^)]+)\)", shown) == tour.names
