"""Page fixes a new organiser asked for: styles from static sheets, honest queue and support states, the
nugget page naming the judge its counts use, no raw Python structures on pages."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    TurnFactory,
)


@pytest.fixture
def two_judges():
    collection = CollectionFactory()
    turn = TurnFactory(topic__collection=collection)
    a, b = JudgeFactory(), JudgeFactory()
    for i, (ga, gb) in enumerate([(0, 0), (1, 2), (3, 3), (4, 2)]):
        RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=f"p{i}", grade=ga)
        RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=f"p{i}", grade=gb)
    return collection


@pytest.mark.django_db
def test_the_served_campaign_report_links_its_style_sheet_and_the_file_carries_a_copy(
    client, two_judges, tmp_path
):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:agreement-campaign", args=[two_judges.name]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/static/css/report.css"' in page and "<style" not in page
    assert "javascript:" not in page
    target = tmp_path / "report.html"
    call_command(
        "campaign_report", "--collection", two_judges.name, "--output", str(target), "--resamples", "20"
    )
    written = target.read_text()
    assert "<style>" in written and "section.wide { grid-column: 1 / -1; }" in written
    assert "/static/" not in written
