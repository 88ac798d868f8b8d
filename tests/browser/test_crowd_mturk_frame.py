"""The MTurk ExternalQuestion page inside an iframe of the fake MTurk worker site, in real Chromium.

The framing page comes from the fake's own origin (another origin than our live server), as MTurk's
worker site does; our page must let that origin frame it, store the answers on our server, then hand
them on to the fake's `externalSubmit`. The preview state shows the questions but no way to answer.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from crowd.models import CrowdAnswer, CrowdAssignment
from crowd.providers.mturk.client import MTurkClient, parse_answer_xml
from crowd.providers.mturk.services import campaign_publish
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import build_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def server(live_server):
    with FakeMTurkServer() as running:
        with override_settings(MTURK_ENDPOINT_URL=running.url, MTURK_EXTERNAL_URL=live_server.url):
            yield running


def _published_batch(server, live_server):
    campaign = build_campaign(batch_size=10)
    campaign_publish(campaign=campaign, client=MTurkClient(endpoint_url=server.url), base_url=live_server.url)
    batch = campaign.batches.get()
    assert batch.hit_id in server.state.hits
    return batch


def test_a_worker_answers_the_framed_hit_with_keys_and_it_reaches_external_submit(page, server, live_server):
    batch = _published_batch(server, live_server)
    items = list(batch.items.select_related("test_question").order_by("position"))
    assert len(items) == 11
    # Answer every test question right, and pairs by a fixed pattern.
    keys = [
        ("y" if item.test_question.answer else "n") if item.is_test else ("y" if n % 3 else "n")
        for n, item in enumerate(items)
    ]
    failures: list[str] = []
    page.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)

    page.goto(f"{server.url}/worker/frame?hitId={batch.hit_id}&workerId=W1")
    frame = page.frame_locator("#mturk-frame")
    frame.locator("html[data-hotkeys-ready]").wait_for(state="attached")
    progress = frame.locator("#crowd-progress")
    assert progress.text_content() == "Question 1 of 11"
    # The page's own sheet applies inside the frame, and crowd.js sets the bar's width through the CSSOM.
    bar = frame.locator("#crowd-bar")
    assert frame.locator(".crowd-bar").evaluate("el => getComputedStyle(el).height") == "6px"
    assert bar.evaluate("el => el.getBoundingClientRect().width") == 0
    frame.locator("#crowd-progress").click()  # give the frame the keyboard, as a worker's click would
    for n, key in enumerate(keys):
        assert progress.text_content() == f"Question {n + 1} of 11"
        page.keyboard.press(key)
    assert progress.text_content() == "All 11 answered"
    ratio = bar.evaluate("el => el.getBoundingClientRect().width / el.parentElement.clientWidth")
    assert ratio == pytest.approx(1, abs=0.01)
    assert refused == []
    frame.locator("#crowd-submit").click()

    # Our page posts on to the fake's externalSubmit inside the frame.
    frame.get_by_text("submitted").wait_for()
    assert "Assignment" in frame.locator("body").text_content()
    assert not failures, failures

    assignment = CrowdAssignment.objects.get(batch=batch)
    assert assignment.worker.worker_id == "W1"
    assert assignment.status == CrowdAssignment.Status.ACCEPTED  # stored before MTurk reported it
    assert assignment.passed_tests is True
    stored = {a.item.position: a.matched for a in CrowdAnswer.objects.select_related("item")}
    assert stored == {n: key == "y" for n, key in enumerate(keys)}
    remote = server.state.assignments[assignment.assignment_id]
    assert remote["AssignmentStatus"] == "Submitted"
    assert parse_answer_xml(remote["Answer"]) == {
        f"q{n + 1}": "yes" if key == "y" else "no" for n, key in enumerate(keys)
    }


def test_the_preview_in_the_frame_shows_the_questions_but_no_way_to_answer(page, server, live_server):
    batch = _published_batch(server, live_server)

    page.goto(f"{server.url}/worker/frame?hitId={batch.hit_id}")
    frame = page.frame_locator("#mturk-frame")

    assert frame.locator("#crowd-preview").is_visible()
    assert frame.locator("#crowd-yes").is_disabled()
    assert frame.locator("#crowd-no").is_disabled()
    frame.locator("#crowd-progress").click()
    page.keyboard.press("y")
    assert frame.locator("#crowd-progress").text_content() == "Question 1 of 11"
    assert not frame.locator("#crowd-submit").is_visible()
    assert frame.locator("#crowd-submit").count() == 1  # present in the form, but never shown
    assert not CrowdAssignment.objects.exists()
    assert not server.state.assignments
