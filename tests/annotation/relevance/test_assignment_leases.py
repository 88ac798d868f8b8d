"""Handing out units with redundancy and expiring leases; resuming; the assign_work command."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.models import Assignment, PoolEntry, PtkbStatement, RelevanceJudgment, WorkSlot
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.relevance.selectors import unit_progress
from annotation.relevance.services import (
    WorkRefused,
    work_close,
    work_grade,
    work_lease,
    work_next,
    work_ptkb_submit,
)
from annotation.services import judge_for_assessor
from tests.concurrency import at_the_same_instant
from tests.factories import UserFactory, relevance_campaign


def _finish(slot, user):
    judge = judge_for_assessor(user=user)
    unit = slot.unit
    for entry in PoolEntry.objects.filter(
        pool=unit.assignment.pool, turn_id__in=unit.turn_pks
    ).select_related("turn"):
        work_grade(user=user, slot_pk=slot.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=2)
    for turn in entry.turn.topic.turns.filter(pk__in=unit.turn_pks):
        answers = {s.pk: False for s in PtkbStatement.objects.filter(topic=turn.topic)}
        work_ptkb_submit(slot=slot, judge=judge, turn=turn, answers=answers)


@pytest.mark.django_db
def test_it_cuts_turns_or_conversations_into_units_with_one_copy_per_redundancy():
    alice, bob = UserFactory(), UserFactory()
    by_turn = relevance_campaign(assessors=[alice, bob], n_turns=3, redundancy=2)
    by_conversation = relevance_campaign(assessors=[alice, bob], n_turns=3, unit_kind="conversation")

    assert by_turn.units.count() == 3
    assert WorkSlot.objects.filter(unit__assignment=by_turn).count() == 6
    assert by_conversation.units.count() == 1
    assert len(by_conversation.units.get().turn_pks) == 3


@pytest.mark.django_db
def test_it_rejects_redundancy_above_the_number_of_assessors():
    alice = UserFactory()
    with pytest.raises(AssignmentFailed, match="redundancy 2 needs at least 2"):
        relevance_campaign(assessors=[alice], redundancy=2)
    assert not Assignment.objects.exists()


@pytest.mark.django_db
def test_an_assessor_resumes_the_unit_they_hold():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2)

    first = work_lease(assignment=assignment, user=alice)
    again = work_lease(assignment=assignment, user=alice)

    assert first is not None and again is not None
    assert again.pk == first.pk
    assert WorkSlot.objects.filter(assessor=alice).count() == 1


@pytest.mark.django_db
def test_a_completed_unit_hands_over_to_the_next_and_progress_counts_per_turn():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=3)
    first = work_lease(assignment=assignment, user=alice)
    judge = judge_for_assessor(user=alice)
    entry = PoolEntry.objects.filter(pool=assignment.pool, turn_id=first.unit.turn_pks[0]).first()
    work_grade(user=alice, slot_pk=first.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=3)
    assert work_close(slot=first, judge=judge) is False

    progress = unit_progress(slot=first, judge=judge)
    assert [(t.judged, t.to_judge, t.ptkb_done) for t in progress.turns] == [(1, 3, False)]

    _finish(first, alice)
    first.refresh_from_db()
    second = work_lease(assignment=assignment, user=alice)

    assert first.completed_at is not None
    assert second is not None and second.unit_id != first.unit_id
    assert work_lease(assignment=assignment, user=alice).pk == second.pk


@pytest.mark.django_db
def test_redundancy_gives_each_unit_to_distinct_assessors_and_no_more():
    users = [UserFactory() for _ in range(3)]
    assignment = relevance_campaign(assessors=users, n_turns=1, redundancy=2)

    got = [work_lease(assignment=assignment, user=u) for u in users]

    assert got[0] is not None and got[1] is not None
    assert got[0].unit_id == got[1].unit_id and got[0].pk != got[1].pk
    assert got[2] is None


@pytest.mark.django_db
def test_an_expired_lease_passes_to_the_next_assessor_but_a_live_one_does_not():
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=1, lease_minutes=30)
    slot = work_lease(assignment=assignment, user=alice)

    assert work_lease(assignment=assignment, user=bob) is None

    later = timezone.now() + timedelta(minutes=31)
    taken = work_lease(assignment=assignment, user=bob, now=later)

    assert taken is not None and taken.pk == slot.pk
    slot.refresh_from_db()
    assert slot.assessor == bob


@pytest.mark.django_db
def test_an_assessor_removed_from_the_assignment_can_no_longer_grade_or_renew_the_unit_they_hold():
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=1, n_passages=2, n_ptkb=0)
    slot = work_lease(assignment=assignment, user=alice)
    entry = PoolEntry.objects.filter(pool=assignment.pool).first()
    assignment.assessors.remove(alice)

    with pytest.raises(WorkRefused):
        work_grade(user=alice, slot_pk=slot.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=2)
    with pytest.raises(WorkRefused):
        work_next(user=alice, assignment_pk=assignment.pk)
    with pytest.raises(WorkRefused):
        work_next(user=alice, assignment_pk=assignment.pk, slot_pk=slot.pk)
    taken = work_lease(assignment=assignment, user=bob)

    assert taken is not None and taken.pk == slot.pk  # free at once, though alice's lease has not run out
    assert not RelevanceJudgment.objects.exists()


@pytest.mark.django_db
def test_assign_work_command_creates_the_assignment(capsys):
    alice = UserFactory(username="alice")
    UserFactory(username="bob")
    source = relevance_campaign(assessors=[alice], n_turns=2)
    pool = source.pool

    call_command(
        "assign_work",
        collection=pool.collection.name,
        pool="pool",
        name="round2",
        assessors=["alice", "bob"],
        redundancy=2,
        unit="conversation",
    )

    assert "1 conversation unit x 2" in capsys.readouterr().out
    made = Assignment.objects.get(name="round2")
    assert set(made.assessors.values_list("username", flat=True)) == {"alice", "bob"}
    with pytest.raises(CommandError, match="no such users: carol"):
        call_command(
            "assign_work", collection=pool.collection.name, pool="pool", name="r3", assessors=["carol"]
        )
    with pytest.raises(CommandError, match="no pool"):
        call_command(
            "assign_work", collection=pool.collection.name, pool="nope", name="r4", assessors=["alice"]
        )


@pytest.mark.django_db
def test_assignment_create_rejects_turns_outside_the_pool():
    alice = UserFactory()
    source = relevance_campaign(assessors=[alice])
    with pytest.raises(AssignmentFailed, match="not in pool"):
        assignment_create(pool=source.pool, name="x", assessors=[alice], turn_ids=["nope_1"])


@pytest.mark.django_db(transaction=True)
def test_assessors_asking_at_the_same_instant_never_get_the_same_unit_on_postgresql():
    users = [UserFactory() for _ in range(12)]
    assignment = relevance_campaign(assessors=users, n_turns=8, n_passages=1, n_ptkb=0, redundancy=1)

    def ask(user):
        slot = work_lease(assignment=assignment, user=user)
        return slot.unit_id if slot else None

    granted_or_none, errors = at_the_same_instant(ask, users)
    results = dict(zip([u.pk for u in users], granted_or_none, strict=True))

    assert errors == []
    granted = [unit for unit in results.values() if unit is not None]
    assert len(granted) == 8
    assert len(set(granted)) == 8
    assert list(results.values()).count(None) == 4
    assert WorkSlot.objects.filter(unit__assignment=assignment, assessor__isnull=False).count() == 8
