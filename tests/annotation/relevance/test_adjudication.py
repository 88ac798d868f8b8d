"""Adjudication: the pairs redundant assessors dispute go to an adjudicator's queue, and the adjudicated
judge's qrels are the agreed grades plus the adjudicator's, computed here from what each assessor gave;
the pages' access, escaping and the organiser's form."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Adjudication, AdjudicationItem, Judge, RelevanceJudgment, Turn
from annotation.relevance.adjudication.rules import DisputeRule, agreed_grade
from annotation.relevance.adjudication.services import adjudication_assign
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    OrganiserFactory,
    PassageFactory,
    PtkbStatementFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
)
from tests.gold_campaign import gold_campaign, gold_pairs, walk

pytestmark = pytest.mark.django_db


def _grade(pair, shift: int) -> int:
    turn_pk, passage_id = pair
    return (turn_pk + sum(map(ord, passage_id)) + shift) % 5


@pytest.fixture
def campaign():
    """Two assessors with gold planted at 10% who grade every pooled pair; `bob` agrees with `alice` on
    some pairs, is one grade off on some and two or more on the rest."""
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    planted = gold_campaign(assessors=[alice, bob], n_turns=6, n_passages=6, share=0.1, redundancy=2)
    gold = gold_pairs(planted.assignment)
    walks = {
        "alice": walk(alice, planted.assignment, lambda pair: _grade(pair, 0)),
        "bob": walk(bob, planted.assignment, lambda pair: _grade(pair, sum(map(ord, pair[1])) % 3)),
    }
    return planted, gold, walks


def _expected_split(gold, walks, min_difference):
    alice, bob = walks["alice"].given, walks["bob"].given
    shared = [pair for pair in alice if pair in bob and pair not in gold]
    disputed = {pair for pair in shared if abs(alice[pair] - bob[pair]) >= min_difference}
    agreed = {pair: min(alice[pair], bob[pair]) for pair in shared if pair not in disputed}
    return agreed, disputed


def _assign(collection, **extra):
    out = StringIO()
    call_command(
        "assign_adjudication",
        collection=collection.name,
        judges=["assessor:alice", "assessor:bob"],
        min_difference=2,
        adjudicator="carol",
        name="adjudicated",
        stdout=out,
        **extra,
    )
    return out.getvalue()


def test_disputed_pairs_go_to_the_adjudicator_and_the_qrels_are_agreed_plus_adjudicated(client, campaign):
    planted, gold, walks = campaign
    collection = planted.assignment.pool.collection
    carol = UserFactory(username="carol")
    agreed, disputed = _expected_split(gold, walks, 2)
    assert agreed and disputed and gold  # the fixture has each kind of pair

    said = _assign(collection)

    adjudication = Adjudication.objects.get(judge__name="adjudicated")
    queued = set(
        AdjudicationItem.objects.filter(adjudication=adjudication).values_list("turn_id", "passage_id")
    )
    assert queued == disputed
    assert f"{len(agreed)} agreed pairs written, {len(disputed)} disputed pairs in carol's queue" in said
    judge = adjudication.judge
    assert judge.kind == Judge.Kind.ADJUDICATED
    written = dict(
        ((t, p), g)
        for t, p, g in RelevanceJudgment.objects.filter(judge=judge).values_list(
            "turn_id", "passage_id", "grade"
        )
    )
    assert written == agreed  # agreed grades are written when the adjudication is assigned

    client.force_login(carol)
    adjudicated = {}
    page = client.post(reverse("adjudication-start", args=[adjudication.pk]))
    while page.url != reverse("adjudication-queue"):
        shown = client.get(page.url)
        assert shown.status_code == 200
        item = shown.context["item"]
        pair = (item.turn_id, item.passage_id)
        adjudicated[pair] = (walks["alice"].given[pair] + walks["bob"].given[pair]) // 2
        page = client.post(page.url, {"grade": adjudicated[pair], "time_spent_ms": 2000})
        assert page.status_code == 302
    assert set(adjudicated) == disputed
    assert not AdjudicationItem.objects.filter(adjudication=adjudication, graded_at__isnull=True).exists()

    out = StringIO()
    call_command("export_qrels", collection=collection.name, judge="adjudicated", stdout=out)
    turn_ids = dict(Turn.objects.filter(collection=collection).values_list("turn_id", "pk"))
    exported = {}
    for line in out.getvalue().splitlines():
        turn_id, _, passage_id, grade = line.split()
        exported[(turn_ids[turn_id], passage_id)] = int(grade)
    assert exported == {**agreed, **adjudicated}


def test_assigning_the_same_adjudication_again_is_refused_and_changes_nothing(campaign):
    planted, _, _ = campaign
    collection = planted.assignment.pool.collection
    UserFactory(username="carol")
    _assign(collection)
    items, grades = AdjudicationItem.objects.count(), RelevanceJudgment.objects.count()

    with pytest.raises(CommandError, match="already the adjudication of"):
        _assign(collection)

    assert Adjudication.objects.count() == 1
    assert (AdjudicationItem.objects.count(), RelevanceJudgment.objects.count()) == (items, grades)


def _two_judges(grades_a, grades_b, *, collection=None):
    collection = collection or CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    a, b = AssessorJudgeFactory(), AssessorJudgeFactory()
    for ga, gb in zip(grades_a, grades_b, strict=True):
        passage_id = PassageFactory(collection=collection).passage_id
        if ga is not None:
            RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=passage_id, grade=ga)
        if gb is not None:
            RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=passage_id, grade=gb)
    return collection, turn, a, b


def test_pairs_across_the_threshold_are_disputed_when_asked():
    collection, _, a, b = _two_judges([1, 0, 3, 2], [2, 1, 3, None])
    adjudicator = UserFactory()

    across = adjudication_assign(
        collection=collection,
        judges=[a, b],
        adjudicator=adjudicator,
        name="across",
        rule=DisputeRule(min_difference=3, across_threshold=True, relevant_from=2),
    )
    within = adjudication_assign(
        collection=collection,
        judges=[a, b],
        adjudicator=adjudicator,
        name="within",
        rule=DisputeRule(min_difference=3),
    )

    assert (across.agreed, across.disputed, across.single) == (2, 1, 1)
    assert (within.agreed, within.disputed, within.single) == (3, 0, 1)
    assert sorted(RelevanceJudgment.objects.filter(judge__name="within").values_list("grade", flat=True)) == [
        0,
        1,
        3,
    ]


def test_the_agreed_grade_is_the_lower_median():
    assert agreed_grade([2, 2]) == 2
    assert agreed_grade([1, 2]) == 1
    assert agreed_grade([3, 1, 2]) == 2
    assert agreed_grade([0, 1, 1, 2]) == 1


def _adjudication(*, show_grades=False, text="A passage.", utterance="What now?"):
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection), utterance=utterance)
    PtkbStatementFactory(topic=turn.topic, text="I live in <b>Leiden</b>.")
    passage = PassageFactory(collection=collection, text=text)
    a, b = AssessorJudgeFactory(), AssessorJudgeFactory()
    RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=passage.passage_id, grade=0)
    RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=passage.passage_id, grade=4)
    adjudicator = UserFactory()
    assigned = adjudication_assign(
        collection=collection,
        judges=[a, b],
        adjudicator=adjudicator,
        name=f"adj-{collection.name}",
        rule=DisputeRule(),
        show_grades=show_grades,
    )
    item = assigned.adjudication.items.get()
    return assigned.adjudication, item, (a, b)


def test_only_the_adjudicator_reaches_the_queue(client):
    adjudication, item, (a, _) = _adjudication()
    page = reverse("adjudication-item", args=[adjudication.pk, item.pk])

    assert client.get(page).status_code == 302  # anonymous: to the login page
    assert client.post(page, {"grade": 2}).status_code == 302
    client.force_login(a.user)
    assert client.get(page).status_code == 404
    assert client.post(page, {"grade": 2}).status_code == 404
    assert client.post(reverse("adjudication-start", args=[adjudication.pk])).status_code == 404
    assert (
        f'id="adjudication-{adjudication.pk}"'
        not in client.get(reverse("adjudication-queue")).content.decode()
    )
    client.force_login(OrganiserFactory())
    assert client.get(page).status_code == 404
    assert not RelevanceJudgment.objects.filter(judge=adjudication.judge).exists()

    client.force_login(adjudication.adjudicator)
    assert (
        f'id="adjudication-{adjudication.pk}"' in client.get(reverse("adjudication-queue")).content.decode()
    )
    assert client.get(page).status_code == 200
    assert client.post(page, {"grade": 9}).status_code == 400
    assert client.post(page, {"grade": 2}).status_code == 302
    assert RelevanceJudgment.objects.get(judge=adjudication.judge).grade == 2


def test_the_adjudication_page_escapes_collection_text(client):
    adjudication, item, _ = _adjudication(
        text="<script>alert('passage')</script>", utterance="<img src=x onerror=alert(1)>"
    )
    client.force_login(adjudication.adjudicator)

    html = client.get(reverse("adjudication-item", args=[adjudication.pk, item.pk])).content.decode()

    assert "<script>alert(" not in html and "&lt;script&gt;alert(" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>Leiden</b>" not in html and "&lt;b&gt;Leiden&lt;/b&gt;" in html


def test_earlier_grades_are_shown_only_when_the_organiser_chose_so(client):
    hidden, hidden_item, (a, _) = _adjudication()
    shown, shown_item, (c, d) = _adjudication(show_grades=True)

    client.force_login(hidden.adjudicator)
    html = client.get(reverse("adjudication-item", args=[hidden.pk, hidden_item.pk])).content.decode()
    assert 'id="earlier-grades"' not in html and a.name not in html
    client.force_login(shown.adjudicator)
    html = client.get(reverse("adjudication-item", args=[shown.pk, shown_item.pk])).content.decode()
    assert 'id="earlier-grades"' in html
    assert f"<td>{c.name}</td><td>0</td>" in html and f"<td>{d.name}</td><td>4</td>" in html


def test_the_console_form_is_for_organisers_and_answers_400_with_reasons(client):
    collection, _, a, b = _two_judges([0, 2], [3, 2])
    carol = UserFactory(username="carol")
    url = reverse("adjudication-assign", args=[collection.name])
    good = {
        "judges": [a.pk, b.pk],
        "min_difference": 2,
        "relevant_from": 2,
        "adjudicator": "carol",
        "name": "adj",
    }

    assert client.get(url).status_code == 302
    client.force_login(carol)
    assert client.get(url).status_code == 403
    assert client.post(url, good).status_code == 403
    client.force_login(OrganiserFactory())
    assert client.get(url).status_code == 200

    one_judge = client.post(url, {**good, "judges": [a.pk]})
    assert one_judge.status_code == 400
    assert "at least two different judges" in one_judge.content.decode()
    taken = client.post(url, {**good, "name": a.name})
    assert taken.status_code == 400 and "exists already" in taken.content.decode()
    assert client.post(url, {**good, "min_difference": 7}).status_code == 400
    assert not Adjudication.objects.exists()

    assert client.post(url, good).status_code == 302
    adjudication = Adjudication.objects.get()
    assert adjudication.adjudicator == carol and adjudication.items.count() == 1
    again = client.post(url, good)
    assert again.status_code == 400 and "already the adjudication of" in again.content.decode()


def test_the_collection_page_links_to_its_adjudication_form(client):
    collection = CollectionFactory()
    client.force_login(OrganiserFactory())

    html = client.get(reverse("console-collection", args=[collection.name])).content.decode()

    assert f'href="{reverse("adjudication-assign", args=[collection.name])}"' in html
