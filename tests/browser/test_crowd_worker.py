"""A worker answers an in-platform batch with the keyboard on a phone-sized screen."""

from __future__ import annotations

import pytest

from crowd.models import CrowdAnswer, CrowdCampaign
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_worker_answers_a_batch_with_y_and_n_on_a_phone(page, login):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    item = batch.items.filter(test_question__isnull=True).order_by("position").first()
    item.response.text = "<b>bold?</b> & more"
    item.response.save()
    user = UserFactory()
    page.set_viewport_size({"width": 390, "height": 844})
    login(user.username)

    page.goto("/crowd/")
    page.click("#crowd-next")
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    progress = page.locator("#crowd-progress")
    assert progress.text_content() == "Question 1 of 11"
    # Text is shown as text, and the pair stacks into one column that fits the screen.
    assert page.get_by_text("<b>bold?</b> & more", exact=True).count() >= 1
    assert page.locator(".crowd-response b").count() == 0
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390

    keys = ["y" if n % 3 else "n" for n in range(11)]
    for n, key in enumerate(keys):
        assert progress.text_content() == f"Question {n + 1} of 11"
        page.keyboard.press(key)
    assert progress.text_content() == "All 11 answered"
    # b goes back one question; answering again keeps the total.
    page.keyboard.press("b")
    assert progress.text_content() == "Question 11 of 11"
    page.keyboard.press(keys[-1])
    page.click("#crowd-submit")
    page.wait_for_url("**/crowd/")
    assert page.locator("#crowd-none").is_visible()

    answers = {a.item.position: a.matched for a in CrowdAnswer.objects.select_related("item")}
    assert answers == {n: key == "y" for n, key in enumerate(keys)}
    assert all(a.time_spent_ms is not None for a in CrowdAnswer.objects.all())


def test_worker_answers_a_three_way_nugget_support_batch_with_s_p_and_n(page, login):
    from tests.crowd.crowd_helpers import build_nugget_campaign

    campaign = build_nugget_campaign(topics=2, runs=1, nuggets=2, n_tests=3, batch_size=4, tests_per_batch=1)
    batch = campaign.batches.get()
    login(UserFactory().username)

    page.goto(f"/crowd/batches/{batch.id}/")
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    keys = ["s", "p", "n", "s", "p"]
    for key in keys:
        page.keyboard.press(key)
    assert page.locator("#crowd-progress").text_content() == "All 5 answered"
    page.keyboard.press("b")
    assert page.locator("#crowd-partial").get_attribute("aria-pressed") == "true"
    page.keyboard.press("p")
    page.click("#crowd-submit")
    page.wait_for_url("**/crowd/")

    labels = {"s": "support", "p": "partial_support", "n": "not_support"}
    answers = {a.item.position: a.support for a in CrowdAnswer.objects.select_related("item")}
    assert answers == {n: labels[key] for n, key in enumerate(keys)}
