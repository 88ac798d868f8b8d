"""The TREC RAG nugget pages in real Chromium, keyboard only: post-editing a nugget list (rewrite, merge,
split, delete, add, reorder, finish), vital/okay post-editing the LLM's labels, and answer-nugget
assignment answer after answer. Screenshots go to docs/tour/rag-nuggets/ when ASSAY_TOUR_SCREENSHOTS=1
(the assessor's guide shows them)."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import Nugget, NuggetAssignment, NuggetEdit, NuggetImportanceJudgment, TopicWork
from annotation.rag_nuggets.services import nugget_work_assign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "tour" / "rag-nuggets"


def _shot(page, name: str) -> None:
    if os.environ.get("ASSAY_TOUR_SCREENSHOTS") != "1":
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    from PIL import Image

    with Image.open(path) as picture:
        small = picture.convert("RGB").quantize(colors=64)
    small.save(path, optimize=True)


def _work(data, step, condition="scratch"):
    return nugget_work_assign(
        topic=data.topic,
        user=UserFactory(username="alice"),
        step=step,
        source_judge=data.llm,
        condition=condition,
        machine_judge=data.llm if condition == "post-edit" else None,
    )


def _open(page, work):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(reverse("rag-nuggets-page", args=[work.id, 1]))
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")


def _edits(page, n: int) -> None:
    page.wait_for_function(
        "n => document.getElementById('rag-nugget-list').dataset.edits === String(n)",
        arg=n,
    )


def _texts(page) -> list[str]:
    return page.locator("#rag-nugget-list > li").all_inner_texts()


def test_it_post_edits_a_nugget_list_by_keyboard_and_keeps_every_edit(page, login, data):
    work = _work(data, "edit")
    login("alice")
    _open(page, work)
    assert page.locator("#rag-legend").is_visible()
    assert _texts(page) == ["nugget 1 <i>text</i>", "nugget 2 <i>text</i>", "nugget 3 <i>text</i>"]

    page.keyboard.press("j")
    page.keyboard.press("Enter")  # rewrite nugget 2
    page.keyboard.press("Control+a")
    page.keyboard.type("Bees collect nectar")
    page.keyboard.press("Enter")
    _edits(page, 1)
    page.keyboard.press("k")
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.keyboard.press("m")  # merge 1 and 2
    page.keyboard.press("Control+a")
    page.keyboard.type("Bees collect nectar from flowers")
    page.keyboard.press("Enter")
    _edits(page, 2)
    assert _texts(page) == ["Bees collect nectar from flowers", "nugget 3 <i>text</i>"]
    page.keyboard.press("j")
    page.keyboard.press("s")  # split nugget 3: one line per part
    page.keyboard.press("Control+a")
    page.keyboard.type("Bees fan their wings")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("Water evaporates")
    page.keyboard.press("Enter")
    _edits(page, 3)
    page.keyboard.press("d")  # delete the first part
    _edits(page, 4)
    page.keyboard.press("a")  # add after the focused nugget
    page.keyboard.type("Honey is stored in wax cells")
    page.keyboard.press("Enter")
    _edits(page, 5)
    page.keyboard.press("Alt+ArrowUp")  # move the new nugget up
    _edits(page, 6)
    assert _texts(page) == [
        "Bees collect nectar from flowers",
        "Honey is stored in wax cells",
        "Water evaporates",
    ]
    _shot(page, "01-post-edit")
    page.keyboard.press("f")
    page.wait_for_url(f"**{reverse('rag-nuggets-work')}")

    own = Nugget.objects.filter(judge__user__username="alice").order_by("position")
    assert [n.text for n in own] == [
        "Bees collect nectar from flowers",
        "Honey is stored in wax cells",
        "Water evaporates",
    ]
    one, _two, three = data.nuggets
    assert [n.original_id for n in own] == [one.pk, None, three.pk]
    assert list(NuggetEdit.objects.order_by("id").values_list("action", flat=True)) == [
        "rewrite",
        "merge",
        "split",
        "delete",
        "add",
        "reorder",
    ]
    work.refresh_from_db()
    assert work.completed_at is not None and work.time_spent_ms > 0


def test_it_post_edits_importance_with_v_and_o(page, login, data):
    work = _work(data, "importance", condition="post-edit")
    login("alice")
    _open(page, work)
    assert page.locator("#rag-label-list input[value=vital]").first.is_checked()  # the LLM's label
    page.keyboard.press("o")
    page.keyboard.press("v")
    _shot(page, "02-importance")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('rag-nuggets-work')}")

    rows = NuggetImportanceJudgment.objects.filter(judge__user__username="alice").order_by("nugget__position")
    assert [(r.importance, r.shown_label, r.changed, r.condition) for r in rows] == [
        ("okay", "vital", True, "post-edit"),
        ("vital", "okay", True, "post-edit"),
        ("okay", "okay", False, "post-edit"),
    ]
    assert TopicWork.objects.get().completed_at is not None


def test_it_assigns_answers_to_nuggets_with_s_p_n_one_answer_after_another(page, login, data):
    work = _work(data, "assignment")
    login("alice")
    _open(page, work)
    assert "[2024-1-doc0#0]" in page.locator("#rag-answer").inner_text()
    page.keyboard.press("s")
    page.keyboard.press("p")
    page.keyboard.press("n")
    _shot(page, "03-assignment")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('rag-nuggets-page', args=[work.id, 2])}")
    page.wait_for_selector("html[data-hotkeys-ready]", state="attached")
    page.keyboard.press("s")
    page.keyboard.press("Enter")  # two nuggets left: the page says so and goes to the first of them
    assert page.locator("#rag-missing").is_visible()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("p")
    page.keyboard.press("n")
    page.keyboard.press("n")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{reverse('rag-nuggets-work')}")

    first, second = data.answers
    labels = dict(
        ((r.response_id, r.nugget.position), r.label)
        for r in NuggetAssignment.objects.filter(judge__user__username="alice").select_related("nugget")
    )
    assert labels == {
        (first.pk, 0): "support",
        (first.pk, 1): "partial_support",
        (first.pk, 2): "not_support",
        (second.pk, 0): "partial_support",
        (second.pk, 1): "not_support",
        (second.pk, 2): "not_support",
    }
    assert TopicWork.objects.get().completed_at is not None
