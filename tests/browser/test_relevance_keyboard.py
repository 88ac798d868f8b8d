"""An assessor grades a unit in real headless Chromium with the keyboard alone."""

import io
import re
import uuid

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotation.models import Passage, PoolEntry, PtkbJudgment, RelevanceJudgment, WorkSlot
from tests.factories import UserFactory, relevance_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVIL = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'


def _ready(page, url_pattern: str) -> None:
    """Wait for the screen and for its keys to be bound (module scripts run after the page shows)."""
    expect(page).to_have_url(re.compile(url_pattern))
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")


def test_an_assessor_grades_revises_and_does_ptkb_with_the_keyboard_only(page, login):
    alice = UserFactory(username="alice")
    assignment = relevance_campaign(
        assessors=[alice], n_turns=1, n_passages=5, n_ptkb=2, passage_texts=[EVIL, "b", "c", "d", "e"]
    )
    entries = list(PoolEntry.objects.filter(pool=assignment.pool).order_by("order"))
    statements = list(assignment.units.get().topic.ptkb.order_by("pk"))

    login("alice")
    page.goto("/relevance/")
    # Autofocus lands a moment after the load event; a key pressed before it goes nowhere.
    expect(page.locator("button[id^=start-]")).to_be_focused()
    page.keyboard.press("Enter")  # the focused "Get next unit" button
    expect(page.locator("#grade-form")).to_be_visible()
    slot = WorkSlot.objects.get(assessor=alice)

    # The page is loaded once for the unit: a full load would drop this marker.
    page.evaluate("window.sameDocument = true")
    grades = [3, 1, 4, 0]
    for index, grade in enumerate(grades):
        _ready(page, rf"/relevance/work/{slot.pk}/\d+/{index}/$")
        expect(page.locator("#passage-id")).to_have_text(entries[index].passage_id)
        page.keyboard.press(str(grade))
        page.keyboard.press("Enter")
    _ready(page, rf"/{slot.pk}/\d+/4/$")

    # Back to the fourth passage, which shows its grade, and revise it from 0 to 2.
    page.keyboard.press("Backspace")
    _ready(page, rf"/{slot.pk}/\d+/3/$")
    expect(page.locator("#grade-0")).to_be_checked()
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    _ready(page, rf"/{slot.pk}/\d+/4/$")
    assert page.evaluate("window.sameDocument === true")  # grading, back and revising stayed on the page
    expect(page.locator("#progress")).to_have_text(
        f"Unit {entries[0].turn.turn_id} · turn {entries[0].turn.turn_id}: passage 5 of 5 (4 judged) · "
        "4 / 5 judged in the unit"
    )
    page.keyboard.press("4")
    page.keyboard.press("Enter")

    # PTKB step: the first statement relevant, the second not.
    _ready(page, rf"/{slot.pk}/\d+/ptkb/$")
    page.keyboard.press("1")
    page.keyboard.press("0")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/relevance/$"))
    expect(page.locator(".units")).to_contain_text("complete")

    # The passage holding markup was shown as text, and its script never ran.
    evil = next(i for i, e in enumerate(entries) if Passage.objects.get(passage_id=e.passage_id).text == EVIL)
    page.goto(f"/relevance/work/{slot.pk}/{entries[0].turn_id}/{evil}/")
    expect(page.locator("#passage-text")).to_have_text(EVIL)
    assert page.title() != "pwned"

    page.click("#logout")
    page.wait_for_url("**/accounts/login/")

    out = io.StringIO()
    call_command(
        "export_qrels", collection=assignment.pool.collection.name, judge="assessor:alice", stdout=out
    )
    turn_id = entries[0].turn.turn_id
    final = dict(zip([e.passage_id for e in entries], [3, 1, 4, 2, 4], strict=True))
    expected = sorted(f"{turn_id} 0 {pid} {grade}" for pid, grade in final.items())
    assert sorted(out.getvalue().splitlines()) == expected
    assert all(j.time_spent_ms is not None and j.time_spent_ms > 0 for j in RelevanceJudgment.objects.all())
    ptkb = dict(PtkbJudgment.objects.values_list("statement_id", "relevant"))
    assert ptkb == {statements[0].pk: True, statements[1].pk: False}
    slot.refresh_from_db()
    assert slot.completed_at is not None


def test_without_javascript_the_passage_forms_post_and_move_on(browser, live_server):
    alice = UserFactory(username="alice")
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    entries = list(PoolEntry.objects.filter(pool=assignment.pool).order_by("order"))
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        page.goto("/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-for-tests-123")
        page.click("#login-submit")
        page.goto("/relevance/")
        page.click("button[id^=start-]")
        for index, grade in enumerate([2, 4]):
            # The unit opens at its resume URL, which shows the first open screen itself; each form
            # posts to its screen's own URL and moves on to the next screen's.
            screen = rf"/relevance/work/\d+/\d+/{index}/$" if index else r"/relevance/work/\d+/$"
            expect(page).to_have_url(re.compile(screen))
            expect(page.locator("#passage-id")).to_have_text(entries[index].passage_id)
            page.check(f"#grade-{grade}")
            page.click("#submit-grade")
        expect(page).to_have_url(re.compile(r"/relevance/$"))
        expect(page.locator(".units")).to_contain_text("complete")
    finally:
        context.close()

    grades = dict(RelevanceJudgment.objects.values_list("passage_id", "grade"))
    assert grades == {entries[0].passage_id: 2, entries[1].passage_id: 4}
    assert WorkSlot.objects.get(assessor=alice).completed_at is not None


def test_a_grade_answered_503_after_its_commit_is_retried_with_its_key_and_stored_once(page, login):
    alice = UserFactory(username="alice")
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    entries = list(PoolEntry.objects.filter(pool=assignment.pool).order_by("order"))
    sent = []

    def lose_the_first_answer(route):
        # Every attempt reaches the server; the first one's answer is replaced by an outage's 503.
        sent.append((route.request.headers.get("idempotency-key"), route.request.post_data_json))
        answer = route.fetch()
        if len(sent) == 1:
            route.fulfill(status=503, json={"detail": "The database is unavailable.", "code": "unavailable"})
        else:
            route.fulfill(response=answer)

    page.route("**/grade/", lose_the_first_answer)
    login("alice")
    page.goto("/relevance/")
    expect(page.locator("button[id^=start-]")).to_be_focused()
    page.keyboard.press("Enter")
    _ready(page, r"/relevance/work/\d+/")
    page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(page.locator("#hint")).to_contain_text("press Enter to try again")
    page.keyboard.press("Enter")
    expect(page.locator("#passage-id")).to_have_text(entries[1].passage_id)

    assert len(sent) == 2
    assert sent[0] == sent[1]  # the same key and the same body, time spent included
    assert uuid.UUID(sent[0][0]).version == 4
    judgment = RelevanceJudgment.objects.get()
    assert (judgment.passage_id, judgment.grade) == (entries[0].passage_id, 3)
    assert judgment.time_spent_ms == sent[0][1]["time_spent_ms"] > 0  # counted once
