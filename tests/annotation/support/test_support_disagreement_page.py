"""The disagreement study's report as an organiser page: per human condition, how often and with what
Cohen's kappa the blind assessor agrees with the human and with the LLM."""

from __future__ import annotations

import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Condition, Judge, ResponseSentence, SupportJudgment
from annotation.support.disagreements import support_disagreements_assign
from annotation.support.services import assignment_units, support_judgment_submit
from tests.background import IMMEDIATE
from tests.factories import CollectionFactory, OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """A task runs as it is queued, so a stored report's first view computes it and shows the figures
    (test_stored_support_pages.py follows the queue)."""
    settings.TASKS = IMMEDIATE


LABELS = ["FS", "PS", "NS"]
BLIND_LABELS = {
    ("rag-a", "2024-1", 0): "FS",  # human FS, GPT PS  (post-edit)
    ("rag-b", "2024-1", 0): "FS",  # human NS, GPT FS  (post-edit)
    ("rag-b", "2024-1", 1): "PS",  # human PS, GPT FS  (post-edit)
    ("rag-a", "2024-2", 0): "FS",  # human NS, GPT FS  (scratch)
    ("rag-b", "2024-2", 0): "NS",  # human FS, GPT PS  (scratch)
}


@pytest.fixture
def reassessed(study):  # noqa: F811
    """carol re-assessed every sampled disagreement blind."""
    carol = UserFactory(username="carol")
    for assignment in support_disagreements_assign(
        collection=study["collection"],
        human_judges=study["humans"],
        machine_judge=study["gpt"],
        assessor=carol,
    ):
        for unit in assignment_units(assignment):
            response = unit.sentence.response
            support_judgment_submit(
                assignment=assignment,
                user=carol,
                sentence=unit.sentence,
                citation_index=unit.citation_index,
                label=BLIND_LABELS[(response.run.name, response.turn.turn_id, unit.sentence.index)],
            )
    return study


def url(collection) -> str:
    return reverse("support-disagreements", args=[collection.name])


def test_it_sends_anonymous_users_to_login(client, reassessed):
    response = client.get(url(reassessed["collection"]))

    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_it_forbids_assessors(client, reassessed):
    client.force_login(reassessed["alice"])

    response = client.get(url(reassessed["collection"]))

    assert response.status_code == 403


def test_it_shows_organisers_agreement_and_kappa_per_condition_with_the_study_judges_chosen(
    client, reassessed
):
    client.force_login(OrganiserFactory())

    response = client.get(url(reassessed["collection"]))

    assert response.status_code == 200
    rows = {row["condition"]: row for row in response.context["rows"]}
    assert list(rows) == ["scratch", "post-edit", "all"]
    post_edit = rows["post-edit"]
    assert (
        post_edit["units"],
        post_edit["agrees_with_human"]["agree"],
        post_edit["agrees_with_machine"]["agree"],
    ) == (
        3,
        2,
        1,
    )
    human_kappa = cohen_kappa_score(["FS", "FS", "PS"], ["FS", "NS", "PS"], labels=LABELS)
    machine_kappa = cohen_kappa_score(["FS", "FS", "PS"], ["PS", "FS", "FS"], labels=LABELS)
    assert post_edit["agrees_with_human"]["kappa"] == pytest.approx(human_kappa)
    assert post_edit["agrees_with_machine"]["kappa"] == pytest.approx(machine_kappa)
    scratch = rows["scratch"]
    assert (
        scratch["units"],
        scratch["agrees_with_human"]["agree"],
        scratch["agrees_with_machine"]["agree"],
    ) == (
        2,
        0,
        1,
    )
    assert scratch["neither"] == 1 and rows["all"]["units"] == 5
    html = response.content.decode()
    assert f"{human_kappa:.3f}" in html and f"{machine_kappa:.3f}" in html
    assert 'data-condition="post-edit"' in html and "Post-editing" in html
    assert "Independent assessor assessor:carol" in html and "LLM judge gpt-4o" in html


def test_it_answers_json_for_the_chosen_judges(client, reassessed):
    client.force_login(OrganiserFactory())

    response = client.get(
        url(reassessed["collection"]),
        {"human": ["assessor:bob"], "llm": "gpt-4o", "blind": "assessor:carol", "format": "json"},
    )

    assert response.status_code == 200
    payload = response.json()
    assert set(payload) == {"scratch", "post-edit", "all"}
    # Only bob's (scratch) disagreements count when bob is the only human judge.
    assert (payload["scratch"]["units"], payload["post-edit"]["units"], payload["all"]["units"]) == (2, 0, 2)
    assert payload["scratch"]["agrees_with_machine"] == {
        "agree": 1,
        "rate": 0.5,
        "kappa": pytest.approx(cohen_kappa_score(["FS", "NS"], ["FS", "PS"], labels=LABELS)),
    }
    assert payload["post-edit"]["agrees_with_human"] == {"agree": 0, "rate": None, "kappa": None}


def test_it_answers_400_with_the_reason_for_an_unknown_judge(client, reassessed):
    client.force_login(OrganiserFactory())

    page = client.get(
        url(reassessed["collection"]),
        {"human": ["assessor:alice"], "llm": "ghost", "blind": "assessor:carol"},
    )
    data = client.get(
        url(reassessed["collection"]),
        {"human": ["assessor:alice"], "llm": "ghost", "blind": "assessor:carol", "format": "json"},
    )

    assert page.status_code == 400
    assert "Select a valid choice" in page.content.decode()
    assert page.context["rows"] == []
    assert data.status_code == 400
    assert data.json()["detail"].startswith("llm: Select a valid choice")


def test_it_refuses_an_independent_assessor_who_is_also_a_human_judge(client, reassessed):
    # alice post-edited topic 2024-1 and (say) re-assessed a unit of 2024-2 blind.
    sentence = ResponseSentence.objects.get(
        response__run__name="rag-a", response__turn__turn_id="2024-2", index=0
    )
    SupportJudgment.objects.create(
        judge=reassessed["humans"][0],
        sentence=sentence,
        passage_id=sentence.citations[0],
        label="FS",
        condition=Condition.BLIND,
    )
    client.force_login(OrganiserFactory())

    response = client.get(
        url(reassessed["collection"]),
        {
            "human": ["assessor:alice", "assessor:bob"],
            "llm": "gpt-4o",
            "blind": "assessor:alice",
            "format": "json",
        },
    )

    assert response.status_code == 400
    assert response.json()["detail"] == (
        "blind: the independent assessor is one of the human judges, so not independent"
    )


def test_it_escapes_judge_names(client, reassessed):
    Judge.objects.filter(pk=reassessed["gpt"].pk).update(name="gpt <b>4o</b>")
    client.force_login(OrganiserFactory())

    response = client.get(url(reassessed["collection"]))

    assert response.status_code == 200
    html = response.content.decode()
    assert "LLM judge gpt &lt;b&gt;4o&lt;/b&gt;" in html and "<b>4o</b>" not in html


def test_it_explains_how_to_start_when_nothing_was_reassessed(client, study):  # noqa: F811
    client.force_login(OrganiserFactory())

    response = client.get(url(study["collection"]))
    empty = client.get(url(CollectionFactory()))

    assert response.status_code == 200 and empty.status_code == 200
    assert 'id="disagreement-empty"' in response.content.decode()
    assert "manage.py support_disagreements" in empty.content.decode()
    assert response.context["rows"] == []


def test_json_without_judges_or_a_reassessment_answers_400_with_the_reason(client):
    client.force_login(OrganiserFactory())

    response = client.get(url(CollectionFactory()), {"format": "json"})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "name the judges" in response.json()["detail"]
