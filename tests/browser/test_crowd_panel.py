"""In real Chromium: an organiser composes an in-platform campaign and makes a study address on its page;
a panel participant (Prolific-style ids in the address) answers on a phone, goes back once, and gets the
completion code; the campaign page then shows their time."""

from __future__ import annotations

import re

import pytest

from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign, CrowdStudy
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import OrganiserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_compose_make_a_study_and_answer_it_as_a_panel_participant(page, login, browser, live_server):
    # A collection with two conversations, runs, gold nuggets and test questions (from an older campaign).
    source = build_campaign(provider=CrowdCampaign.Provider.PLATFORM)
    OrganiserFactory(username="org")
    login("org")

    page.goto(f"/crowd/campaigns/new/?collection={source.collection.name}")
    page.fill("#id_name", "panel-study")
    page.select_option("#id_nugget_judge", source.nugget_judge.name)
    page.fill("#id_batch_size", "10")
    page.fill("#id_assignments", "1")
    page.fill("#id_generate_tests", "0")
    page.click("#campaign-compose button[type=submit]")
    page.wait_for_url("**/crowd/campaigns/panel-study/")
    campaign = CrowdCampaign.objects.get(name="panel-study")
    assert campaign.label_judge.name == "crowd-majority"
    assert "MTurk fee" not in page.content()

    page.fill("#id_completion_code", "C0DE1234")
    page.click("#action-study button[type=submit]")
    page.wait_for_selector(".crowd-study")
    study = CrowdStudy.objects.get(campaign=campaign)
    address = page.locator(".crowd-study code").first.text_content()
    assert address == f"{live_server.url}/crowd/study/{study.key}/"

    participant = browser.new_context(viewport={"width": 390, "height": 844})
    phone = participant.new_page()
    phone.goto(f"{address}?PROLIFIC_PID=5f3a9c0e1b2d4a&STUDY_ID=s1&SESSION_ID=x1")
    phone.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    instructions = phone.locator("#crowd-instructions")
    assert instructions.get_attribute("open") is not None
    total = int(re.search(r"of (\d+)", phone.locator("#crowd-progress").text_content()).group(1))
    phone.click("#crowd-no")
    # From the second question on, the instructions are folded so the question fills the screen.
    assert instructions.get_attribute("open") is None
    assert phone.locator("#crowd-pair, .crowd-item:not([hidden])").first.bounding_box()["y"] < 400
    # Back to the first: "No" is the chosen one, "Yes" is not.
    phone.click("#crowd-back")
    assert phone.locator("#crowd-no").get_attribute("aria-pressed") == "true"
    assert phone.locator("#crowd-yes").get_attribute("aria-pressed") == "false"
    for _ in range(total):
        phone.click("#crowd-yes")
    phone.click("#crowd-submit")
    phone.wait_for_selector("#crowd-code")
    assert phone.locator("#crowd-code").text_content() == "C0DE1234"

    assignment = CrowdAssignment.objects.get(batch__campaign=campaign)
    assert assignment.worker.worker_id == "prolific:5f3a9c0e1b2d4a"
    assert CrowdAnswer.objects.filter(assignment=assignment).count() == total
    # Opening the address again stores nothing and shows the code again.
    phone.goto(f"{address}?PROLIFIC_PID=5f3a9c0e1b2d4a&STUDY_ID=s1&SESSION_ID=x2")
    assert phone.locator("#crowd-code").text_content() == "C0DE1234"
    assert CrowdAssignment.objects.filter(batch__campaign=campaign).count() == 1
    participant.close()

    page.goto("/crowd/campaigns/panel-study/")
    row = page.locator("#crowd-workers tbody tr").first
    assert row.locator("td").first.text_content() == "prolific:5f3a9c0e1b2d4a"
    assert row.locator("td").last.text_content() != "–"
