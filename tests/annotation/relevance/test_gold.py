"""Gold pairs in relevance work: planted at the asked share, shown like pooled passages, marked when
graded, kept out of exported qrels unless asked, and a paused assessor gets no new unit."""

from __future__ import annotations

import random
import uuid
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import AssessorPause, GoldGrade, GoldPair, PoolEntry, RelevanceJudgment, WorkSlot
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.relevance.io import qrels_lines
from annotation.relevance.quality.gold import allocate, gold_target
from annotation.relevance.quality.pauses import assessor_pause, assessor_resume
from annotation.relevance.selectors import assessor_queue, unit_progress, unit_steps
from annotation.relevance.services import NextKind, work_next
from annotation.services import judge_for_assessor
from tests.factories import JudgeFactory, OrganiserFactory, UserFactory, relevance_campaign
from tests.gold_campaign import api_client, gold_campaign, gold_pairs, walk

pytestmark = pytest.mark.django_db


def test_it_plants_gold_at_the_asked_share_from_pairs_outside_the_pool():
    campaign = gold_campaign(assessors=[UserFactory(), UserFactory()], n_turns=10, n_passages=9, share=0.1)

    gold = gold_pairs(campaign.assignment)
    pooled = set(PoolEntry.objects.filter(pool=campaign.assignment.pool).values_list("turn_id", "passage_id"))
    # 90 pooled pairs: 10 gold make 10% of the 100 an assessor sees.
    assert len(gold) == 10
    assert not set(gold) & pooled
    assert all(campaign.reference_grades[pair] == grade for pair, grade in gold.items())
    # Each gold pair sits in the unit of its own turn.
    for pair in GoldPair.objects.filter(unit__assignment=campaign.assignment):
        assert pair.turn_id in pair.unit.turn_pks


def test_it_refuses_a_share_without_a_judge_and_a_judge_with_nothing_to_plant():
    assignment = relevance_campaign(assessors=[UserFactory()], n_ptkb=0)
    with pytest.raises(AssignmentFailed, match="both"):
        assignment_create(pool=assignment.pool, name="again", assessors=[UserFactory()], gold_share=0.1)
    with pytest.raises(AssignmentFailed, match="no gold to plant"):
        assignment_create(
            pool=assignment.pool,
            name="again",
            assessors=[UserFactory()],
            gold_judge=JudgeFactory(),
            gold_share=0.1,
        )


def test_it_shares_gold_out_in_proportion_and_within_each_units_room():
    assert gold_target(90, 0.1) == 10
    assert gold_target(95, 0.05) == 5
    assert allocate(10, [9] * 10, [2] * 10) == [1] * 10
    assert allocate(4, [10, 10], [0, 5]) == [0, 4]
    assert allocate(5, [30, 10, 10], [5, 5, 5]) == [3, 1, 1]
    assert allocate(9, [1, 1], [2, 2]) == [2, 2]


def test_an_assessor_sees_gold_in_the_turns_order_with_nothing_to_tell_it_apart():
    alice = UserFactory()
    campaign = gold_campaign(assessors=[alice], redundancy=1, n_turns=4, n_passages=5, share=0.2)
    gold = gold_pairs(campaign.assignment)
    assert gold

    done = walk(alice, campaign.assignment, lambda pair: 2)

    gold_shown = [p for p in done.shown if (p["turn_pk"], p["passage_id"]) in gold]
    pooled_shown = [p for p in done.shown if (p["turn_pk"], p["passage_id"]) not in gold]
    assert len(gold_shown) == len(gold)
    # The same fields, of the same types, for both.
    assert {k: type(v) for k, v in gold_shown[0].items()} == {k: type(v) for k, v in pooled_shown[0].items()}
    # Every turn's passages come with the places 0, 1, 2, ... in order, gold among them.
    by_turn = defaultdict(list)
    for payload in done.shown:
        by_turn[payload["turn_pk"]].append(payload["index"])
    assert all(indexes == list(range(len(indexes))) for indexes in by_turn.values())
    # Passage text is there for gold as for the rest.
    assert all(p["text"] for p in gold_shown)
    # The page at a gold passage's address shows that passage.
    page = api_client(alice)
    page.force_login(alice)
    shown = page.get(gold_shown[0]["url"])
    assert shown.status_code == 200
    assert gold_shown[0]["passage_id"] in shown.content.decode()


def test_the_assessor_page_counts_gold_among_the_unit_screens():
    alice = UserFactory()
    campaign = gold_campaign(assessors=[alice], redundancy=1, n_turns=2, n_passages=5, share=0.2)
    gold = gold_pairs(campaign.assignment)
    judge = judge_for_assessor(user=alice)
    step = work_next(user=alice, assignment_pk=campaign.assignment.pk)
    slot = campaign.assignment.units.get(slots__pk=step.slot_pk).slots.get(pk=step.slot_pk)

    progress = unit_progress(slot=slot, judge=judge)

    turn_pk = slot.unit.turn_pks[0]
    assert progress.to_judge == 5 + sum(1 for t, _ in gold if t == turn_pk)
    client = api_client(alice)
    client.force_login(alice)
    queue = client.get(reverse("relevance-queue"))
    assert queue.status_code == 200


def test_gold_grades_are_marked_and_left_out_of_the_qrels_unless_asked(tmp_path):
    alice = UserFactory()
    campaign = gold_campaign(assessors=[alice], redundancy=1)
    gold = gold_pairs(campaign.assignment)
    walk(alice, campaign.assignment, lambda pair: 3)
    judge = judge_for_assessor(user=alice)
    collection = campaign.assignment.pool.collection

    marked = set(
        GoldGrade.objects.filter(judgment__judge=judge).values_list("pair__turn_id", "pair__passage_id")
    )
    assert marked == set(gold)
    assert RelevanceJudgment.objects.filter(judge=judge).count() == 100

    without = list(qrels_lines(collection=collection, judge=judge))
    with_gold = list(qrels_lines(collection=collection, judge=judge, include_gold=True))
    assert len(without) == 90 and len(with_gold) == 100
    gold_ids = {passage_id for _, passage_id in gold}
    assert not any(line.split()[2] in gold_ids for line in without)

    out = tmp_path / "alice.qrels"
    call_command("export_qrels", collection=collection.name, judge=judge.name, output=str(out))
    assert len(out.read_text().splitlines()) == 90
    call_command(
        "export_qrels", collection=collection.name, judge=judge.name, output=str(out), include_gold=True
    )
    assert len(out.read_text().splitlines()) == 100

    organiser = api_client(OrganiserFactory())
    organiser.force_login(OrganiserFactory())
    url = reverse("console-export", args=[collection.name, "qrels"])
    assert len(organiser.get(url, {"judge": judge.name}).getvalue().decode().splitlines()) == 90
    assert (
        len(organiser.get(url, {"judge": judge.name, "include_gold": "on"}).getvalue().decode().splitlines())
        == 100
    )


def test_assign_work_plants_gold_from_the_command_line(capsys):
    campaign = gold_campaign(assessors=[UserFactory()], redundancy=1)
    alice, bob = UserFactory(), UserFactory()

    call_command(
        "assign_work",
        collection=campaign.assignment.pool.collection.name,
        pool="pool",
        name="with-gold",
        assessors=[alice.username, bob.username],
        gold_judge=campaign.reference.name,
        gold_share=0.1,
    )

    assert "10 gold pairs from" in capsys.readouterr().out
    assert GoldPair.objects.filter(unit__assignment__name="with-gold").count() == 10


def test_the_work_form_plants_gold():
    campaign = gold_campaign(assessors=[UserFactory()], redundancy=1)
    organiser = OrganiserFactory()
    alice = UserFactory()
    client = api_client(organiser)
    client.force_login(organiser)
    collection = campaign.assignment.pool.collection

    answer = client.post(
        reverse("console-work", args=[collection.name]),
        {
            "form": "relevance",
            "pool": campaign.assignment.pool.pk,
            "name": "form-gold",
            "assessors": [alice.pk],
            "unit_kind": "turn",
            "redundancy": 1,
            "lease_minutes": 60,
            "gold_judge": campaign.reference.name,
            "gold_share": 0.1,
        },
    )

    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert GoldPair.objects.filter(unit__assignment__name="form-gold").count() == 10


def test_the_work_forms_gold_menu_offers_only_judges_with_grades_on_the_collection():
    campaign = gold_campaign(assessors=[UserFactory()], redundancy=1)
    idle = JudgeFactory(name="idle-judge")
    organiser = OrganiserFactory()
    client = api_client(organiser)
    client.force_login(organiser)
    collection = campaign.assignment.pool.collection

    page = client.get(reverse("console-work", args=[collection.name])).content.decode()
    refused = client.post(
        reverse("console-work", args=[collection.name]),
        {
            "form": "relevance",
            "pool": campaign.assignment.pool.pk,
            "name": "idle-gold",
            "assessors": [UserFactory().pk],
            "unit_kind": "turn",
            "redundancy": 1,
            "lease_minutes": 60,
            "gold_judge": idle.name,
            "gold_share": 0.1,
        },
    )

    menu = page.split('name="gold_judge"')[1].split("</select>")[0]
    assert f'value="{campaign.reference.name}"' in menu
    assert idle.name not in menu
    assert refused.status_code == 400
    assert not GoldPair.objects.filter(unit__assignment__name="idle-gold").exists()


def test_a_paused_assessor_finishes_their_unit_and_gets_no_new_one_until_resumed():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=3, n_passages=2, n_ptkb=0)
    collection = assignment.pool.collection
    held = work_next(user=alice, assignment_pk=assignment.pk)
    assert held.kind is NextKind.PASSAGE

    assessor_pause(collection=collection, user=alice, by=None)

    assert AssessorPause.objects.filter(collection=collection, user=alice).exists()
    # The unit they hold is still theirs.
    assert work_next(user=alice, assignment_pk=assignment.pk).slot_pk == held.slot_pk
    judge = judge_for_assessor(user=alice)
    for entry in PoolEntry.objects.filter(
        pool=assignment.pool, turn_id__in=assignment.units.first().turn_pks
    ):
        RelevanceJudgment.objects.create(
            judge=judge, turn_id=entry.turn_id, passage_id=entry.passage_id, grade=1
        )
    assert work_next(user=alice, assignment_pk=assignment.pk).kind is NextKind.NO_WORK

    assert assessor_resume(collection=collection, user=alice)
    assert work_next(user=alice, assignment_pk=assignment.pk).kind is NextKind.PASSAGE


def test_the_gold_planted_is_random_but_within_the_reference_judges_pairs():
    rng = random.Random(1)
    campaign = gold_campaign(assessors=[UserFactory()], redundancy=1, seed=rng.randrange(100))
    assert set(gold_pairs(campaign.assignment)) <= set(campaign.reference_grades)


def test_the_queue_counts_gold_as_screens_to_judge_and_judged():
    alice = UserFactory()
    campaign = gold_campaign(assessors=[alice], redundancy=1)
    walk(alice, campaign.assignment, lambda pair: 1)

    [row] = assessor_queue(user=alice, judge=judge_for_assessor(user=alice))

    assert (row.judged, row.to_judge) == (100, 100)
    assert row.state == "finished"


def test_a_gold_passage_graded_on_the_page_is_stored_and_marked():
    alice = UserFactory()
    campaign = gold_campaign(assessors=[alice], redundancy=1, n_turns=1, n_passages=4, share=0.2)
    [(turn_pk, passage_id)] = gold_pairs(campaign.assignment)
    client = api_client(alice)
    client.force_login(alice)
    step = work_next(user=alice, assignment_pk=campaign.assignment.pk)
    slot = WorkSlot.objects.get(pk=step.slot_pk)
    steps = unit_steps(slot=slot, judge=None)
    index = next(s.index for s in steps if s.entry is not None and s.entry.passage_id == passage_id)

    answer = client.post(
        reverse("relevance-passage", args=[slot.pk, turn_pk, index]),
        {"grade": 4, "time_spent_ms": 5000, "grade_key": str(uuid.uuid4())},
    )

    assert answer.status_code == 302
    judgment = RelevanceJudgment.objects.get(judge__user=alice, turn_id=turn_pk, passage_id=passage_id)
    assert judgment.grade == 4
    assert GoldGrade.objects.filter(judgment=judgment).exists()


def test_it_refuses_an_assessor_of_the_assignment_as_its_reference_judge():
    alice = UserFactory()
    campaign = gold_campaign(assessors=[UserFactory()], redundancy=1, n_turns=2)

    with pytest.raises(AssignmentFailed, match="is an assessor of this assignment"):
        assignment_create(
            pool=campaign.assignment.pool,
            name="self-checked",
            assessors=[alice],
            gold_judge=judge_for_assessor(user=alice),
            gold_share=0.1,
        )
