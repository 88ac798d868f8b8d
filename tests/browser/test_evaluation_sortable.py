"""The evaluation table in real Chromium: columns sort on click, numbers as numbers, turns part by part."""

import pytest

from tests.background import IMMEDIATE
from tests.factories import (
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


def column(page, index):
    return page.locator("#evaluation-table tbody tr").evaluate_all(
        f"rows => rows.map(r => r.cells[{index}].textContent.trim())"
    )


def test_it_sorts_columns_numerically_and_turns_naturally(page, login, settings):
    # The table's figures are computed as the page asks for them (tests/judging/test_report_pages.py
    # pins the worker that computes them otherwise).
    settings.TASKS = IMMEDIATE
    collection = CollectionFactory(name="sorting")
    topic = TopicFactory(collection=collection, number="1")
    turns = [TurnFactory(topic=topic, turn_id=f"1_{n}", position=n) for n in range(1, 12)]
    judge = JudgeFactory(name="nist")
    for turn in turns:
        RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="rel", grade=3)
    # Runs lacking 10, 9 and 2 of the 11 judged turns: as text "10" would sort before "2" and "9".
    for name, covered in [("misses-10", 1), ("misses-9", 2), ("misses-2", 9)]:
        run = RunFactory(collection=collection, name=name)
        for turn in turns[:covered]:
            RankingFactory(run=run, turn=turn, passage_ids=["other", "rel"])
    OrganiserFactory(username="org")
    login("org")

    page.goto("/judging/evaluation/sorting/?judge=nist&rel=2")
    missing_header = page.locator("#evaluation-table thead th", has_text="Turns missing")
    missing_header.click()
    assert column(page, 7) == ["10", "9", "2"]
    assert missing_header.get_attribute("aria-sort") == "descending"
    missing_header.click()
    assert column(page, 7) == ["2", "9", "10"]
    page.locator("#evaluation-table thead th", has_text="Run").press("Enter")
    assert column(page, 0) == ["misses-10", "misses-2", "misses-9"]

    page.click("text=misses-2")
    page.wait_for_url("**/runs/misses-2/**")
    turn_header = page.locator("#evaluation-table thead th", has_text="Turn")
    turn_header.click()
    assert column(page, 0)[:3] == ["1_1", "1_2", "1_3"]
    turn_header.click()
    assert [cell.split()[0] for cell in column(page, 0)[:3]] == ["1_11", "1_10", "1_9"]
    page.locator("#evaluation-table thead th", has_text="nDCG@5").click()
    scores = [float(v) for v in column(page, 1)]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1] == 0.0
