"""The live agreement page in real Chromium: it polls by itself, and collection text stays text."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import Judge
from annotation.relevance.assignments import assignment_create
from annotation.relevance.pooling import pool_build
from judging.agreement.live import ASSESSORS_PER_PAGE
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
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """The live server runs a task as it is queued, so each poll after a new label computes the stored
    figures (tests/judging/agreement/test_live_stored.py follows the queue)."""
    settings.TASKS = IMMEDIATE


LLM_NAME = 'gpt <b id="injected">4o</b>'
LLM_GRADES = {"p0": 3, "p1": 2, "p2": 0}
INTERVAL_MS = 300
# One polling interval, plus a margin for a machine loaded by the rest of the suite.
UPDATE_WITHIN_MS = INTERVAL_MS + 4000


@pytest.fixture
def campaign():
    """An LLM judge (a name with markup) graded three passages; one assessor has graded the first."""
    collection = CollectionFactory(name="live-c")
    turn = TurnFactory(topic=TopicFactory(collection=collection, number="<i>7</i>"))
    llm = JudgeFactory(name=LLM_NAME, kind=Judge.Kind.LLM)
    for passage_id, grade in LLM_GRADES.items():
        RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=passage_id, grade=grade)
    ann = AssessorJudgeFactory(user=UserFactory(username="ann"))
    RelevanceJudgmentFactory(judge=ann, turn=turn, passage_id="p0", grade=LLM_GRADES["p0"])
    OrganiserFactory(username="org")
    # Ann's relevance work on the turn: assessors grade only through their assignments.
    RankingFactory(run=RunFactory(collection=collection), turn=turn, passage_ids=list(LLM_GRADES))
    pool = pool_build(collection=collection, name="pool", depth=len(LLM_GRADES)).pool
    assignment = assignment_create(pool=pool, name="live-work", assessors=[ann.user])
    return collection, turn, ann, assignment


def _cells(page, judge_name: str) -> list[str]:
    return page.locator(f'#live-table tbody tr[data-judge="{judge_name}"] td').all_inner_texts()


def test_the_table_updates_by_itself_when_an_assessor_submits_through_the_api(
    page, login, browser, live_server, campaign
):
    collection, turn, ann, assignment = campaign
    login("org")
    page.goto(f"{reverse('judging:agreement-live', args=[collection.name])}?interval={INTERVAL_MS}")

    assert page.locator("#live-table").get_attribute("data-interval") == str(INTERVAL_MS)
    row = page.locator('#live-table tbody tr[data-judge="assessor:ann"]')
    row.wait_for()
    assert _cells(page, "assessor:ann")[:6] == ["assessor:ann", "1", LLM_NAME, "1", "1.000", "n/a"]
    # The markup in the judge's name is shown as text, never parsed into an element.
    assert page.locator("#injected").count() == 0

    # The assessor grades a second passage through the assessor API while the organiser's page is open.
    assessor = browser.new_context(base_url=live_server.url)
    try:
        auth = {"Authorization": f"Token {Token.objects.create(user=ann.user).key}"}
        step = assessor.request.post(reverse("relevance-api-next", args=[assignment.pk]), headers=auth)
        assert step.status == 200, step.text()
        passage_id = step.json()["passage_id"]
        # p0 is graded already; the LLM gave the other two grades other than 1.
        assert passage_id in {"p1", "p2"}
        answer = assessor.request.post(
            reverse("relevance-api-grade", args=[step.json()["slot"]]),
            headers=auth,
            data={"turn_pk": turn.pk, "passage_id": passage_id, "grade": 1},
        )
        assert answer.status == 201, answer.text()
    finally:
        assessor.close()

    # Without a reload: the page's own polling picks the new label up.
    page.wait_for_function(
        """() => {
            const row = document.querySelector('#live-table tbody tr[data-judge="assessor:ann"]');
            return row && row.cells[1].textContent === "2";
        }""",
        timeout=UPDATE_WITHIN_MS,
    )
    assert _cells(page, "assessor:ann")[:5] == ["assessor:ann", "2", LLM_NAME, "2", "0.500"]
    assert page.locator("#live-empty").is_hidden()
    assert page.locator("#live-error").is_hidden()


def test_a_new_assessor_appears_with_agreement_against_the_others(page, login, campaign):
    collection, turn, _ann, _assignment = campaign
    login("org")
    page.goto(f"{reverse('judging:agreement-live', args=[collection.name])}?interval={INTERVAL_MS}")
    page.locator('#live-table tbody tr[data-judge="assessor:ann"]').wait_for()
    assert page.locator("#live-table tbody tr").count() == 1

    # A second assessor's label lands in the database directly (as the assessor pages write it).
    bea = AssessorJudgeFactory(user=UserFactory(username="bea<script>"))
    RelevanceJudgmentFactory(judge=bea, turn=turn, passage_id="p0", grade=1)

    newcomer = page.locator('#live-table tbody tr[data-judge="assessor:bea<script>"]')
    newcomer.wait_for(timeout=UPDATE_WITHIN_MS)
    cells = _cells(page, "assessor:bea<script>")
    assert cells[0] == "assessor:bea<script>"
    # bea vs the LLM on p0: 1 vs 3; vs ann (the other assessor) on p0: 1 vs 3.
    assert cells[1:5] == ["1", LLM_NAME, "1", "0.000"]
    assert cells[6:8] == ["1", "0.000"]
    assert _cells(page, "assessor:ann")[6:8] == ["1", "0.000"]


def test_the_interval_is_clamped_and_defaults_to_five_seconds(page, login, campaign):
    collection = campaign[0]
    login("org")
    url = reverse("judging:agreement-live", args=[collection.name])
    page.goto(f"{url}?interval=1")
    assert page.locator("#live-table").get_attribute("data-interval") == "250"
    page.goto(f"{url}?interval=soon")
    assert page.locator("#live-table").get_attribute("data-interval") == "5000"
    page.goto(url)
    assert page.locator("#live-table").get_attribute("data-interval") == "5000"


def test_the_pager_steps_through_the_assessors_and_the_poll_keeps_the_page(page, login, campaign):
    collection, turn, ann, _assignment = campaign
    # More assessors than a page: each graded p0 alone, so ann (two labels later) leads by labels.
    for i in range(ASSESSORS_PER_PAGE):
        extra = AssessorJudgeFactory(user=UserFactory(username=f"extra{i:02d}"))
        RelevanceJudgmentFactory(judge=extra, turn=turn, passage_id="p0", grade=1)
    RelevanceJudgmentFactory(judge=ann, turn=turn, passage_id="p1", grade=1)
    login("org")
    page.goto(f"{reverse('judging:agreement-live', args=[collection.name])}?interval={INTERVAL_MS}")

    page.locator('#live-table tbody tr[data-judge="assessor:ann"]').wait_for()
    assert page.locator("#live-table tbody tr").count() == ASSESSORS_PER_PAGE
    assert page.locator("#live-range").inner_text() == f"Assessors 1–{ASSESSORS_PER_PAGE} of 21, page 1 of 2"
    assert page.locator("#live-previous").is_disabled()

    page.locator("#live-next").click()
    last = page.locator(f'#live-table tbody tr[data-judge="assessor:extra{ASSESSORS_PER_PAGE - 1:02d}"]')
    last.wait_for()
    assert page.locator("#live-table tbody tr").count() == 1
    assert page.locator("#live-next").is_disabled()
    # Polls go on asking for the page chosen.
    page.wait_for_timeout(3 * INTERVAL_MS)
    assert page.locator("#live-range").inner_text() == "Assessors 21–21 of 21, page 2 of 2"
