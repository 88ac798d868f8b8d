"""Span selection in real Chromium: mouse selection saved with the stored text's offsets, markup shown as text."""

from __future__ import annotations

import pytest

from annotation.models import Nugget
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def make_turn(*texts: str):
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    qrels = JudgeFactory(name="nist")
    passages = []
    for grade, text in zip([4, 3, 2], texts, strict=False):
        passage = PassageFactory(collection=collection, text=text)
        RelevanceJudgmentFactory(judge=qrels, turn=turn, passage_id=passage.passage_id, grade=grade)
        passages.append(passage)
    return turn, passages


def drag_select(page, needle: str) -> None:
    """Press the mouse before the first character of `needle` in the visible passage and release after its last."""
    box = page.evaluate(
        """(needle) => {
            const el = [...document.querySelectorAll('.nugget-passage')].find(a => !a.hidden).querySelector('.passage-text');
            const node = el.firstChild;
            const at = node.data.indexOf(needle);
            const first = document.createRange(); first.setStart(node, at); first.setEnd(node, at + 1);
            const last = document.createRange(); last.setStart(node, at + needle.length - 1); last.setEnd(node, at + needle.length);
            const a = first.getBoundingClientRect(), b = last.getBoundingClientRect();
            return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
        }""",
        needle,
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, (box["y1"] + box["y2"]) / 2, steps=5)
    page.mouse.move(box["x2"], box["y2"], steps=5)
    page.mouse.up()


def test_it_saves_a_mouse_selected_span_that_survives_a_reload(page, login):
    text = "Sunscreen \U0001f31e basics.\nUVB rays burn the outer layer of the skin, while UVA ages it.\r\nReapply every two hours."
    turn, (passage,) = make_turn(text)
    UserFactory(username="ana")
    login("ana")
    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/")
    assert page.locator(".passage-text").evaluate("el => el.textContent") == text

    needle = "UVB rays burn the outer layer"
    drag_select(page, needle)
    page.keyboard.press("s")
    page.wait_for_selector("#nugget-list li")

    start = text.index(needle)  # Python offsets: code points, the emoji counts once
    nugget = Nugget.objects.get()
    assert (nugget.passage_id, nugget.start, nugget.end, nugget.text) == (
        passage.passage_id,
        start,
        start + len(needle),
        needle,
    )
    page.reload()
    item = page.locator("#nugget-list li")
    item.wait_for()
    assert (item.get_attribute("data-start"), item.get_attribute("data-end")) == (
        str(start),
        str(start + len(needle)),
    )
    assert item.locator(".ntext").inner_text() == needle
    highlighted = page.evaluate("() => [...CSS.highlights.get('nugget')].map(r => r.toString())")
    assert highlighted == [needle]


def test_it_shows_passage_markup_as_text_and_saves_spans_over_it(page, login):
    text = 'Before <script>window.pwned = 1</script> and <img src=x onerror="window.pwned = 2"> after.'
    turn, _ = make_turn(text)
    UserFactory(username="ben")
    login("ben")
    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/")

    assert page.evaluate("() => window.pwned") is None
    assert page.locator(".passage-text img, .passage-text script").count() == 0
    assert page.locator(".passage-text").inner_text() == text
    needle = '<img src=x onerror="window.pwned = 2">'
    drag_select(page, needle)
    page.click("#save-span")
    page.wait_for_selector("#nugget-list li")

    assert page.locator("#nugget-list .ntext").inner_text() == needle
    assert page.evaluate("() => window.pwned") is None
    assert Nugget.objects.get().text == needle


def test_it_marks_a_duplicate_and_deletes_without_reloading(page, login):
    text = "Knobby tyres grip loose gravel. Knobby tyres grip mud too."
    turn, _ = make_turn(text)
    UserFactory(username="cy")
    login("cy")
    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/")
    for count, needle in enumerate(
        ["Knobby tyres grip loose gravel.", "Knobby tyres grip mud too."], start=1
    ):
        drag_select(page, needle)
        page.keyboard.press("s")
        page.wait_for_selector(f"#nugget-list li:nth-child({count})")

    page.locator("#nugget-list li").nth(1).locator("select").select_option(label="duplicate of [1]")
    page.wait_for_selector("#nugget-list li.duplicate")
    assert Nugget.objects.get(key="[2]").duplicate_of.key == "[1]"
    page.locator("#nugget-list li").nth(0).locator("button[data-act=delete]").click()
    page.wait_for_function("() => document.querySelectorAll('#nugget-list li').length === 1")

    assert page.locator("#nugget-list li.duplicate").count() == 0
    assert list(Nugget.objects.values_list("key", "duplicate_of")) == [("[2]", None)]


def test_it_rejects_a_span_whose_text_was_tampered_with_and_says_why(page, login):
    turn, (passage,) = make_turn("Plain passage text here.")
    UserFactory(username="dee")
    login("dee")
    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/")
    status = page.evaluate(
        """async (pid) => {
            const r = await fetch(JSON.parse(document.getElementById('nugget-data').textContent).urls.create, {
              method: 'POST', headers: {'Content-Type': 'application/json',
              'X-CSRFToken': document.getElementById('nugget-app').dataset.csrf},
              body: JSON.stringify({passage_id: pid, start: 0, end: 5, text: 'Fancy'})});
            return [r.status, (await r.json()).detail];
        }""",
        passage.passage_id,
    )
    assert status == [400, "the text does not match the passage at 0-5"]
    assert not Nugget.objects.exists()


def test_it_keeps_listing_the_assessors_nuggets_when_the_chosen_judge_hides_their_passages(page, login):
    shown_text, hidden_text = "Gravel bikes take wide tyres.", "Road bikes roll fast on tarmac."
    turn, (shown, hidden) = make_turn(shown_text, hidden_text)
    llm = JudgeFactory(name="llm-relevance")  # grades only the first passage relevant
    RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=shown.passage_id, grade=3)
    RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=hidden.passage_id, grade=0)
    own = AssessorJudgeFactory(user=UserFactory(username="eve"))
    spans = [
        (shown, shown_text, "Gravel bikes"),
        (hidden, hidden_text, "Road bikes"),
        (hidden, hidden_text, "tarmac"),
    ]
    for key, (passage, text, needle) in enumerate(spans, start=1):
        start = text.index(needle)
        NuggetFactory(
            judge=own,
            turn=turn,
            key=f"[{key}]",
            text=needle,
            passage_id=passage.passage_id,
            start=start,
            end=start + len(needle),
        )
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login("eve")

    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/?judge={llm.pk}&min_grade=1")
    page.wait_for_function("() => document.querySelectorAll('#nugget-list li').length === 3")

    assert errors == []
    assert page.locator(".nugget-passage").count() == 1
    assert page.locator("#nugget-count").inner_text() == "3"
    for item in page.locator("#nugget-list li").all():
        labels = item.locator("select option").all_inner_texts()
        assert labels[0] == "not a duplicate" and len(labels) == 3
    hidden_items = page.locator("#nugget-list li.off-page")
    assert hidden_items.count() == 2
    assert "not among the passages shown" in hidden_items.first.inner_text()
    highlighted = page.evaluate("() => [...CSS.highlights.get('nugget')].map(r => r.toString())")
    assert highlighted == ["Gravel bikes"]

    # Marking a nugget whose passage is not shown a duplicate works like any other.
    hidden_items.nth(1).locator("select").select_option(label="duplicate of [2]")
    page.wait_for_selector("#nugget-list li.duplicate")
    assert errors == []
    assert Nugget.objects.get(key="[3]").duplicate_of.key == "[2]"

    # A grade no passage reaches shows none: the nuggets are all still listed, and keys do no harm.
    page.goto(f"/nuggets/{turn.collection.name}/{turn.turn_id}/?judge={llm.pk}&min_grade=4")
    page.wait_for_function("() => document.querySelectorAll('#nugget-list li.off-page').length === 3")
    page.keyboard.press("s")
    assert page.locator("#no-passages").is_visible()
    assert page.locator("#nugget-count").inner_text() == "3"
    assert errors == []
