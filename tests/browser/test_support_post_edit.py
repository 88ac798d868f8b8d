"""The post-editing flow in real Chromium: the LLM label is preselected, a key changes it, Enter stores it."""

import pytest
from django.urls import reverse

from annotation.collection.io import passages_import, run_import
from annotation.models import Judge, SupportJudgment, Topic
from annotation.services import judge_get_or_create
from annotation.support.io import support_labels_import
from annotation.support.services import support_assignment_set
from tests.factories import CollectionFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def assignment(fixtures_dir):
    collection = CollectionFactory(name="rag24")
    run_import(path=fixtures_dir / "support" / "answers.jsonl", collection=collection)
    passages_import(path=fixtures_dir / "support" / "passages.jsonl", collection=collection)
    gpt = judge_get_or_create(name="gpt-4o", kind=Judge.Kind.LLM)
    support_labels_import(
        path=fixtures_dir / "support" / "gpt4o_labels.jsonl", collection=collection, judge=gpt
    )
    topic = Topic.objects.get(collection=collection, number="2024-1")
    return support_assignment_set(
        topic=topic, user=UserFactory(username="alice"), condition="post-edit", machine_judge=gpt
    )


def test_post_editing_changes_the_preselected_label_with_a_key_and_stores_it_as_changed(
    page, login, assignment
):
    login("alice")
    page.goto(reverse("support-unit", args=[assignment.id, 1]))
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")

    assert page.locator("#support-shown").inner_text().startswith("LLM label: Partial support")
    # The answer's sentences are numbered from 1; the first unit is the first sentence.
    assert page.locator("ol.support-answer").evaluate("ol => ol.start") == 1
    assert page.locator("ol.support-answer > li").first.get_attribute("id") == "support-sentence"
    assert page.is_checked("#label-PS")
    page.keyboard.press("1")
    assert page.is_checked("#label-FS")
    assert not page.is_checked("#label-PS")
    page.wait_for_timeout(50)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('support-unit', args=[assignment.id, 2])}")

    assert page.locator("#support-progress").inner_text() == "Unit 2 of 4 · 1 judged"
    assert page.is_checked("#label-FS")  # GPT-4o's label of the second unit, preselected
    stored = SupportJudgment.objects.get(judge__user__username="alice")
    assert (stored.condition, stored.shown_label, stored.label, stored.changed) == (
        "post-edit",
        "PS",
        "FS",
        True,
    )
    assert stored.sentence.index == 0 and stored.sentence.response.run.name == "rag-a"
    assert stored.time_spent_ms is not None and stored.time_spent_ms > 0


def test_keys_f_p_n_pick_labels_and_revising_keeps_the_shown_label(page, login, assignment):
    login("alice")
    page.goto(reverse("support-unit", args=[assignment.id, 1]))
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    page.keyboard.press("n")
    assert page.is_checked("#label-NS")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('support-unit', args=[assignment.id, 2])}")

    page.click("#support-previous")
    page.wait_for_url(f"**{reverse('support-unit', args=[assignment.id, 1])}")
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    assert page.locator("#support-current-label").inner_text().startswith("Your label: No support")
    assert page.is_checked("#label-NS")
    page.keyboard.press("p")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('support-unit', args=[assignment.id, 2])}")

    stored = SupportJudgment.objects.get(judge__user__username="alice")
    assert (stored.shown_label, stored.label, stored.changed) == ("PS", "PS", False)
