"""Support work safeguards: a condition switch is confirmed, the machine judge offered has support labels
here, topics are typed by number and only the collection's are taken, and placeholder answers are never
support work."""

import pytest
from django.urls import reverse

from annotation.models import Condition, Judge, SupportJudgment, Topic, TopicWork
from annotation.services import judge_for_assessor, judge_get_or_create
from annotation.support.services import is_placeholder, support_assignment_set, support_units
from tests.factories import (
    CollectionFactory,
    OrganiserFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

# Every response of the iKAT 2024 sample run (irlabamsterdam/iKAT, 2024/scripts/run_validation) reads so.
IKAT_SAMPLE_TEXT = "<placeholder text for response 1>"


@pytest.fixture
def organiser(client):
    client.force_login(OrganiserFactory(username="olga"))


def placeholder_answer(collection, topic: Topic, text: str = IKAT_SAMPLE_TEXT):
    turn = topic.turns.first() or TurnFactory(topic=topic, collection=collection)
    response = ResponseFactory(run=RunFactory(collection=collection), turn=turn, text=text)
    return ResponseSentenceFactory(response=response, index=0, text=text, citations=["msmarco_v2.1_doc_01#1"])


def organise(client, topic, user, condition, **extra):
    data = {"topic": topic.number, "assessor": user.id, "condition": condition, "max_citations": 1, **extra}
    return client.post(reverse("support-organise", args=["rag24"]), data)


# --- Switching a condition -------------------------------------------------------------------------


def test_it_asks_to_confirm_a_condition_switch_and_switches_only_when_confirmed(
    client, rag, gpt, alice, organiser
):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    support_assignment_set(topic=topic, user=alice, condition="scratch")

    asked = organise(client, topic, alice, "post-edit", machine_judge=gpt.id)

    assert asked.status_code == 400
    page = asked.content.decode()
    assert "alice is assigned topic 2024-1 in condition scratch" in page
    assert 'id="support-switch"' in page and 'name="switch" value="on"' in page
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice).condition == "scratch"

    confirmed = organise(client, topic, alice, "post-edit", machine_judge=gpt.id, switch="on")

    assert confirmed.status_code == 302
    assignment = TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice)
    assert (assignment.condition, assignment.machine_judge) == ("post-edit", gpt)


def test_the_console_refuses_an_unconfirmed_switch_of_support_work(client, rag, alice, organiser):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    support_assignment_set(topic=topic, user=alice, condition="scratch")
    gpt = judge_get_or_create(name="gpt-4o", kind=Judge.Kind.LLM)
    SupportJudgment.objects.create(
        judge=gpt,
        sentence=support_units(topic=topic)[0].sentence,
        citation_index=0,
        passage_id="msmarco_v2.1_doc_01#1",
        label="FS",
        condition=Condition.MACHINE,
    )
    url = reverse("console-work", args=["rag24"])
    post = {"form": "support", "assessors": [alice.pk], "condition": "post-edit", "machine_judge": gpt.pk}

    refused = client.post(url, {**post, "topics": topic.number})

    assert refused.status_code == 400
    assert "confirm the switch" in refused.content.decode()
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice).condition == "scratch"
    assert client.post(url, {**post, "topics": topic.number, "switch": "on"}).status_code == 302
    assert TopicWork.objects.get(kind=TopicWork.Kind.SUPPORT, user=alice).condition == "post-edit"


# --- The machine judge offered ---------------------------------------------------------------------


def test_the_machine_judge_menu_offers_only_judges_with_support_labels_here(client, rag, gpt, organiser):
    relevance_llm = judge_get_or_create(name="llm-relevance", kind=Judge.Kind.LLM)
    RelevanceJudgmentFactory(judge=relevance_llm, turn=Topic.objects.get(number="2024-1").turns.first())
    elsewhere = judge_get_or_create(name="other-support-llm", kind=Judge.Kind.LLM)
    other = CollectionFactory(name="other")
    other_topic = TopicFactory(collection=other)
    SupportJudgment.objects.create(
        judge=elsewhere,
        sentence=placeholder_answer(other, other_topic, "A real sentence."),
        citation_index=0,
        passage_id="msmarco_v2.1_doc_01#1",
        label="NS",
        condition=Condition.MACHINE,
    )

    response = client.get(reverse("support-organise", args=["rag24"]))

    assert response.status_code == 200
    menu = response.content.decode().split('name="machine_judge"')[1].split("</select>")[0]
    assert f'value="{gpt.pk}"' in menu
    assert "llm-relevance" not in menu and "other-support-llm" not in menu
    refused = organise(
        client, Topic.objects.get(number="2024-2"), UserFactory(), "post-edit", machine_judge=relevance_llm.id
    )
    assert refused.status_code == 400
    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).exists()


def test_the_work_pages_machine_judge_menu_is_the_organise_pages(client, rag, gpt, organiser):
    # An assessor's support labels are a person's, never the machine labels a post-editor is shown.
    carol = UserFactory(username="carol")
    support_assignment_set(topic=Topic.objects.get(number="2024-1"), user=carol, condition="scratch")
    SupportJudgment.objects.create(
        judge=judge_for_assessor(user=carol),
        sentence=support_units(topic=Topic.objects.get(number="2024-1"))[0].sentence,
        citation_index=0,
        passage_id="msmarco_v2.1_doc_01#1",
        label="FS",
        condition=Condition.SCRATCH,
    )

    work = client.get(reverse("console-work", args=["rag24"])).content.decode()
    organise = client.get(reverse("support-organise", args=["rag24"])).content.decode()

    def menu(page):
        return page.split('name="machine_judge"')[1].split("</select>")[0]

    assert f'value="{gpt.pk}"' in menu(work)
    assert "carol" not in menu(work)
    assert menu(work) == menu(organise)


# --- Topics typed by number ------------------------------------------------------------------------


def test_the_work_page_hands_out_the_topics_typed_by_number(client, rag, alice, organiser):
    url = reverse("console-work", args=["rag24"])
    post = {"form": "support", "assessors": [alice.pk], "condition": "scratch"}

    page = client.get(url).content.decode()
    response = client.post(url, {**post, "topics": " 2024-2\n"})

    assert '<select name="topics"' not in page and 'name="topics"' in page
    assert response.status_code == 302
    assigned = TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=alice)
    assert [w.topic.number for w in assigned] == ["2024-2"]


def test_the_work_page_hands_out_every_topic_when_none_is_typed(client, rag, alice, organiser):
    url = reverse("console-work", args=["rag24"])

    response = client.post(url, {"form": "support", "assessors": [alice.pk], "condition": "scratch"})

    assert response.status_code == 302
    assigned = TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, user=alice)
    assert sorted(w.topic.number for w in assigned) == ["2024-1", "2024-2"]


def test_the_work_page_refuses_topic_numbers_not_in_the_collection_and_names_them(
    client, rag, alice, organiser
):
    TopicFactory(collection=CollectionFactory(name="other"), number="9")
    url = reverse("console-work", args=["rag24"])
    post = {"form": "support", "assessors": [alice.pk], "condition": "scratch"}

    response = client.post(url, {**post, "topics": "2024-1 9 nope"})

    assert response.status_code == 400
    assert "no topic 9, nope in collection rag24" in response.content.decode()
    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).exists()


def test_the_organise_page_takes_the_topic_by_number_and_refuses_an_unknown_one(
    client, rag, alice, organiser
):
    page = client.get(reverse("support-organise", args=["rag24"])).content.decode()
    unknown = organise(client, Topic(number="2024-9"), alice, "scratch")
    known = organise(client, Topic.objects.get(number="2024-1"), alice, "scratch")

    assert '<select name="topic"' not in page and 'name="topic"' in page
    assert unknown.status_code == 400
    assert "no topic 2024-9 in collection rag24" in unknown.content.decode()
    assert known.status_code == 302
    assert [w.topic.number for w in TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT)] == ["2024-1"]


# --- Placeholder answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        IKAT_SAMPLE_TEXT,
        "",
        "   \n",
        "[PLACEHOLDER]",
        "{answer}",
        "Lorem ipsum dolor sit amet.",
        "TODO",
        "N/A",
        "...",
    ],
)
def test_it_takes_empty_and_stand_in_sentences_for_placeholders(text):
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text",
    ["Bees make honey from nectar.", "None.", "42", "Use a placeholder in the form field.", "See [1]."],
)
def test_it_takes_real_sentences_for_answers(text):
    assert not is_placeholder(text)


def test_placeholder_sentences_are_never_support_units(rag):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    before = {u.key for u in support_units(topic=topic)}
    placeholder = placeholder_answer(rag, topic)

    units = {u.key for u in support_units(topic=topic)}

    assert units == before
    assert (placeholder.id, 0) not in units


def test_the_organiser_page_refuses_a_topic_whose_answers_are_placeholders(client, rag, alice, organiser):
    topic = TopicFactory(collection=rag, number="0")
    placeholder_answer(rag, topic)
    placeholder_answer(rag, topic, "")

    response = organise(client, topic, alice, "scratch")

    assert response.status_code == 400
    assert "the answers of topic 0 are placeholders" in response.content.decode()
    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).exists()


def test_a_placeholder_unit_takes_no_label(client, rag, alice):
    topic = Topic.objects.get(collection=rag, number="2024-1")
    sentence = placeholder_answer(rag, topic)
    blind = TopicWork.objects.create(
        kind=TopicWork.Kind.SUPPORT,
        topic=topic,
        user=alice,
        condition=Condition.BLIND,
        units=[[sentence.id, 0]],
    )
    client.force_login(alice)

    response = client.post(reverse("support-unit", args=[blind.id, 1]), {"label": "NS"})

    assert response.status_code == 400
    assert "is a placeholder (&#x27;&lt;placeholder text for response 1&gt;&#x27;), not an answer" in (
        response.content.decode()
    )
    assert not SupportJudgment.objects.filter(sentence=sentence).exists()
