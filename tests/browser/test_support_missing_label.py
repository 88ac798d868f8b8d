"""Enter on a support unit with no label picked says what to press, in the page, and stores nothing."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.collection.io import passages_import, run_import
from annotation.models import SupportJudgment, Topic
from annotation.support.services import support_assignment_set
from tests.factories import CollectionFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_enter_without_a_label_shows_an_inline_message_until_a_label_is_picked(page, login, fixtures_dir):
    collection = CollectionFactory(name="rag24")
    run_import(path=fixtures_dir / "support" / "answers.jsonl", collection=collection)
    passages_import(path=fixtures_dir / "support" / "passages.jsonl", collection=collection)
    topic = Topic.objects.get(collection=collection, number="2024-1")
    assignment = support_assignment_set(topic=topic, user=UserFactory(username="alice"), condition="scratch")
    login("alice")
    unit = reverse("support-unit", args=[assignment.id, 1])
    page.goto(unit)
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    expect(page.locator("#support-missing")).to_be_hidden()

    page.keyboard.press("Enter")

    expect(page.locator("#support-missing")).to_be_visible()
    expect(page.locator("#support-missing")).to_contain_text("Pick a label first")
    assert page.url.endswith(unit)
    assert not SupportJudgment.objects.exists()
    page.keyboard.press("2")
    expect(page.locator("#support-missing")).to_be_hidden()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('support-unit', args=[assignment.id, 2])}")
    assert SupportJudgment.objects.get().label == "PS"
