"""The TREC RAG nugget pages: reached only through their assessor, hostile ids refused with a reason,
collection text escaped, and query counts that do not grow with nuggets or answers."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Judge, Nugget, NuggetAssignment, NuggetEdit, NuggetImportanceJudgment, TopicWork
from annotation.rag_nuggets.services import nugget_work_assign
from annotation.services import judge_for_assessor
from tests.annotation.rag_nuggets.data import rag_topic
from tests.factories import CollectionFactory, JudgeFactory, OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db


def _work(data, step, condition="scratch", username="alice"):
    return nugget_work_assign(
        topic=data.topic,
        user=UserFactory(username=username),
        step=step,
        source_judge=data.llm,
        condition=condition,
        machine_judge=data.llm if condition == "post-edit" else None,
    )


def _page(work, index=1):
    return reverse("rag-nuggets-page", args=[work.id, index])


def _edit(client, work, body, index=1):
    return client.post(
        reverse("rag-nuggets-edit", args=[work.id, index]),
        body if isinstance(body, str) else json.dumps(body),
        content_type="application/json",
    )


# --- Ownership ------------------------------------------------------------------------------------


def test_it_sends_anonymous_visitors_to_the_login_page(client, data):
    work = _work(data, "edit")
    response = client.get(_page(work))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_validates_ownership_of_every_page_and_edit(client, data):
    work = _work(data, "edit")
    client.force_login(UserFactory(username="mallory"))
    assert client.get(_page(work)).status_code == 404
    assert _edit(client, work, {"action": "delete", "key": "1"}).status_code == 404
    assert client.post(_page(work), {"time_spent_ms": 5}).status_code == 404
    assert not NuggetEdit.objects.exists()
    assert TopicWork.objects.get().started_at is None


def test_it_answers_404_for_a_page_past_the_end(client, data):
    work = _work(data, "assignment")
    client.force_login(work.user)
    assert client.get(_page(work, 1)).status_code == 200
    assert client.get(_page(work, 3)).status_code == 404
    assert client.get(_page(work, 0)).status_code == 404


# --- Post-editing ---------------------------------------------------------------------------------


def test_the_edit_page_shows_question_passages_and_nuggets_escaped(client, data):
    work = _work(data, "edit")
    client.force_login(work.user)
    response = client.get(_page(work))
    assert response.status_code == 200
    body = response.content.decode()
    assert "nugget 1 &lt;i&gt;text&lt;/i&gt;" in body and "<i>text</i>" not in body
    assert "Bees &lt;b&gt;0&lt;/b&gt;" in body
    assert body.index("2024-1-doc0#0") < body.index("2024-1-doc1#0")  # best grade first
    assert 'id="rag-legend"' in body
    work.refresh_from_db()
    assert work.started_at is not None


def test_an_edit_answers_the_new_list_and_keeps_the_edit(client, data):
    work = _work(data, "edit")
    client.force_login(work.user)
    response = _edit(
        client, work, {"action": "rewrite", "key": "2", "text": "<script>x</script>", "time_spent_ms": 70}
    )
    assert response.status_code == 200
    assert response.json()["nuggets"][1] == {"key": "2", "text": "<script>x</script>"}
    assert NuggetEdit.objects.get().action == "rewrite"
    assert TopicWork.objects.get().time_spent_ms == 70
    # The page shows the assessor's list from now on, escaped.
    assert "&lt;script&gt;x&lt;/script&gt;" in client.get(_page(work)).content.decode()


@pytest.mark.parametrize(
    ("body", "code", "detail"),
    [
        ("not json", "parse_error", None),
        ("[1, 2]", "invalid", "Invalid data. Expected a dictionary, but got list."),
        ({"action": "delete", "key": "404"}, "invalid", "No nugget '404' in this list."),
        ({"action": "rewrite", "key": "1", "text": "x", "time_spent_ms": -1}, "invalid", None),
        ({"action": "rewrite", "key": "1", "text": "x" * 2001}, "invalid", None),
    ],
)
def test_it_refuses_a_bad_edit_with_a_reason(client, data, body, code, detail):
    work = _work(data, "edit")
    client.force_login(work.user)
    response = _edit(client, work, body)
    assert response.status_code == 400
    assert response.json()["code"] == code
    if detail:
        assert response.json()["detail"] == detail
    assert not NuggetEdit.objects.exists()


def test_edits_are_refused_on_labelling_work(client, data):
    work = _work(data, "importance")
    client.force_login(work.user)
    assert _edit(client, work, {"action": "delete", "key": "1"}).status_code == 404
    assert not NuggetEdit.objects.exists()


def test_submitting_the_last_question_completes_the_work_and_returns_to_the_list(client, data):
    work = _work(data, "edit")
    client.force_login(work.user)
    response = client.post(_page(work), {"time_spent_ms": 1234})
    assert response.status_code == 302
    assert response["Location"] == reverse("rag-nuggets-work")
    work.refresh_from_db()
    assert work.completed_at is not None and work.time_spent_ms == 1234
    assert Nugget.objects.filter(judge__user=work.user).count() == 3


# --- Labels ---------------------------------------------------------------------------------------


def test_post_edited_importance_preselects_the_llm_label(client, data):
    work = _work(data, "importance", condition="post-edit")
    client.force_login(work.user)
    body = client.get(_page(work)).content.decode()
    first, second, _ = data.nuggets
    assert f'name="label-{first.pk}" value="vital" data-key="v" checked' in body
    assert f'name="label-{second.pk}" value="okay" data-key="o" checked' in body
    assert "LLM: Okay" in body


def test_importance_labels_are_stored_and_the_work_completes(client, data):
    work = _work(data, "importance", condition="post-edit")
    client.force_login(work.user)
    labels = {f"label-{n.pk}": "okay" for n in data.nuggets}
    response = client.post(_page(work), {**labels, "time_spent_ms": 600})
    assert response.status_code == 302
    rows = NuggetImportanceJudgment.objects.filter(judge__user=work.user).order_by("nugget__position")
    assert [(r.importance, r.shown_label, r.changed) for r in rows] == [
        ("okay", "vital", True),
        ("okay", "okay", False),
        ("okay", "okay", False),
    ]
    assert TopicWork.objects.get().completed_at is not None


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"label-{0}": "vital"}, "label every nugget: 2 left without a label"),
        (
            {"label-{0}": "maybe", "label-{1}": "okay", "label-{2}": "okay"},
            "a label must be one of vital, okay",
        ),
        ({"label-abc": "okay"}, "does not name a nugget"),
        (
            {"label-{0}": "okay", "label-{1}": "okay", "label-{2}": "okay", "label-99999999": "okay"},
            "not on this page",
        ),
    ],
)
def test_it_refuses_bad_labels_with_a_reason(client, data, fields, reason):
    work = _work(data, "importance")
    client.force_login(work.user)
    ids = [n.pk for n in data.nuggets]
    response = client.post(_page(work), {name.format(*ids): value for name, value in fields.items()})
    assert response.status_code == 400
    assert reason in response.content.decode()
    assert not NuggetImportanceJudgment.objects.filter(judge__user=work.user).exists()


def test_the_assignment_page_shows_the_answer_with_its_citations_and_stores_labels(client, data):
    work = _work(data, "assignment", condition="post-edit")
    client.force_login(work.user)
    body = client.get(_page(work)).content.decode()
    assert "Bees make honey from nectar." in body and "[2024-1-doc0#0]" in body
    assert body.count('value="partial_support" data-key="p" checked') == 3
    labels = {f"label-{n.pk}": "support" for n in data.nuggets}
    response = client.post(_page(work), labels)
    assert response.status_code == 302
    assert response["Location"] == _page(work, 2)
    first = data.answers[0]
    rows = NuggetAssignment.objects.filter(judge__user=work.user)
    assert {(r.response_id, r.label, r.shown_label, r.changed) for r in rows} == {
        (first.pk, "support", "partial_support", True)
    }


# --- Lists and query counts -----------------------------------------------------------------------


def test_the_work_list_shows_progress_and_the_home_page_links_it(client, data):
    work = _work(data, "importance")
    client.force_login(work.user)
    client.post(_page(work), {f"label-{n.pk}": "okay" for n in data.nuggets})
    body = client.get(reverse("rag-nuggets-work")).content.decode()
    assert "3 / 3 ✓" in body and f'id="rag-open-{work.id}"' in body
    assert 'id="home-rag-nuggets"' in client.get(reverse("home")).content.decode()


@pytest.mark.parametrize("step", ["edit", "importance", "assignment"])
def test_page_queries_do_not_grow_with_nuggets_or_answers(client, step):
    small = rag_topic(nuggets=2, answers=1)
    large = rag_topic(nuggets=12, answers=6, number="2024-9", collection=small.topic.collection)
    counts = []
    for data in (small, large):
        work = _work(data, step, username="alice")
        client.force_login(work.user)
        client.get(_page(work))  # the first visit starts the clock and makes the assessor's judge
        with CaptureQueriesContext(connection) as captured:
            assert client.get(_page(work)).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]
    with CaptureQueriesContext(connection) as captured:
        assert client.get(reverse("rag-nuggets-work")).status_code == 200
    assert len(captured) <= 12


def test_the_organiser_hands_out_work_and_sees_time_per_topic(client, data):
    UserFactory(username="bob")
    client.force_login(OrganiserFactory())
    url = reverse("rag-nuggets-organise", args=["rag24"])
    response = client.post(
        url,
        {
            "step": "edit",
            "topics": [data.topic.pk],
            "users": [UserFactory(username="bob").pk],
            "source_judge": data.llm.pk,
            "condition": "scratch",
        },
    )
    assert response.status_code == 302
    work = TopicWork.objects.get()
    TopicWork.objects.filter(pk=work.pk).update(time_spent_ms=65_000)
    body = client.get(url).content.decode()
    assert "bob" in body and "65 s" in body


def test_the_hand_out_form_refuses_post_editing_without_a_machine_judge(client, data):
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("rag-nuggets-organise", args=["rag24"]),
        {
            "step": "importance",
            "topics": [data.topic.pk],
            "users": [UserFactory(username="bob").pk],
            "source_judge": data.llm.pk,
            "condition": "post-edit",
        },
    )
    assert response.status_code == 400
    assert "Post-editing needs the machine judge" in response.content.decode()
    assert not TopicWork.objects.exists()


def test_the_organiser_page_is_for_organisers(client, data):
    client.force_login(UserFactory())
    assert client.get(reverse("rag-nuggets-organise", args=["rag24"])).status_code == 403


@pytest.mark.parametrize("step", ["importance", "assignment"])
def test_submitting_a_page_of_labels_does_not_grow_with_nuggets(client, step):
    small = rag_topic(nuggets=2, answers=1)
    large = rag_topic(nuggets=12, answers=1, number="2024-9", collection=small.topic.collection)
    counts = []
    for data in (small, large):
        work = _work(data, step, condition="post-edit")
        judge_for_assessor(user=work.user)  # made on a first label: not a cost of the page
        client.force_login(work.user)
        client.get(_page(work))
        with CaptureQueriesContext(connection) as captured:
            response = client.post(
                _page(work),
                {f"label-{n.pk}": "okay" if step == "importance" else "support" for n in data.nuggets},
            )
        assert response.status_code == 302
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_the_hand_out_form_offers_the_machine_judges_with_nugget_labels_here(client, data):
    """Labels of either kind here put a judge in the menu; labels of another collection or none do not."""
    rag_topic(number="2025-9", collection=CollectionFactory(name="other"))
    other_llm = JudgeFactory(name="claude", kind=Judge.Kind.LLM)
    elsewhere = {"nugget__turn__collection__name": "other"}
    NuggetAssignment.objects.filter(**elsewhere).update(judge=other_llm)
    NuggetImportanceJudgment.objects.filter(**elsewhere).update(judge=other_llm)
    importance_only = JudgeFactory(name="importance-only", kind=Judge.Kind.LLM)
    NuggetImportanceJudgment.objects.create(
        judge=importance_only, nugget=data.nuggets[0], importance="vital", condition="machine"
    )
    JudgeFactory(name="no-labels", kind=Judge.Kind.LLM)
    client.force_login(OrganiserFactory())

    form = client.get(reverse("rag-nuggets-organise", args=["rag24"])).context["form"]

    assert [j.name for j in form.fields["machine_judge"].queryset] == ["gpt-4o", "importance-only"]
