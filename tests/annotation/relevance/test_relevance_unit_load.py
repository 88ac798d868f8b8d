"""Opening a unit and the queue page stay cheap as a campaign goes on; reading a page creates no judge."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Judge, PoolEntry, RelevanceJudgment, Turn, WorkSlot
from annotation.relevance.selectors import QUEUE_RECENT_UNITS
from annotation.relevance.services import work_close, work_grade, work_lease, work_next, work_ptkb_submit
from annotation.services import judge_for_assessor
from tests.factories import OrganiserFactory, UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db


def _complete_units(assignment, user, n):
    """Grade and close `n` units through the work rules, as the pages would."""
    judge = judge_for_assessor(user=user)
    for _ in range(n):
        slot = work_lease(assignment=assignment, user=user)
        for entry in PoolEntry.objects.filter(pool=assignment.pool, turn_id__in=slot.unit.turn_pks):
            work_grade(
                user=user, slot_pk=slot.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=2
            )
        for turn in Turn.objects.filter(pk__in=slot.unit.turn_pks):
            answers = {s.pk: True for s in turn.topic.ptkb.all()}
            work_ptkb_submit(slot=slot, judge=judge, turn=turn, answers=answers)
        assert work_close(slot=slot, judge=judge)


def _queue_queries(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("relevance-queue"))
    assert response.status_code == 200
    return len(queries), response.content.decode()


def test_the_queue_page_runs_the_same_queries_after_one_unit_as_after_many(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=QUEUE_RECENT_UNITS + 4, n_passages=2, n_ptkb=1)
    client.force_login(alice)
    _complete_units(assignment, alice, 1)
    early, _page = _queue_queries(client)

    _complete_units(assignment, alice, QUEUE_RECENT_UNITS + 2)
    late, page = _queue_queries(client)

    assert late == early
    done = QUEUE_RECENT_UNITS + 3
    assert (
        f"<strong>{2 * done}</strong> judged / {2 * done} to judge in your units; 1 more unit to take."
        in page
    )
    assert "And 3 earlier units, complete." in page
    assert page.count("in progress (lease") == 0 and page.count(">complete<") == QUEUE_RECENT_UNITS


def test_the_queue_lists_the_open_unit_turn_by_turn_with_its_ptkb_step(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=3, n_ptkb=2)
    client.force_login(alice)
    slot = work_lease(assignment=assignment, user=alice)
    entry = PoolEntry.objects.filter(pool=assignment.pool, turn_id=slot.unit.turn_pks[0]).first()
    work_grade(user=alice, slot_pk=slot.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=1)

    response = client.get(reverse("relevance-queue"))

    assert response.status_code == 200
    (row,) = response.context["rows"]
    ((listed, progress),) = row.copies
    assert listed == slot and row.state == "in progress"
    assert [(t.judged, t.to_judge, t.ptkb_needed, t.ptkb_done) for t in progress.turns] == [
        (1, 3, True, False)
    ]
    assert "<strong>1</strong> judged / 3 to judge in your units" in response.content.decode()


def test_opening_a_unit_is_the_next_unit_post_and_one_page_that_shows_its_first_open_screen(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=3, n_ptkb=0)
    client.force_login(alice)

    opened = client.post(reverse("relevance-next", args=[assignment.pk]))
    slot = WorkSlot.objects.get(assessor=alice)
    page = client.get(opened["Location"])

    assert opened.status_code == 302
    assert opened["Location"] == reverse("relevance-resume", args=[slot.pk])
    assert page.status_code == 200
    first = PoolEntry.objects.filter(pool=assignment.pool, turn_id=slot.unit.turn_pks[0]).order_by("order")[0]
    assert page.context["entry"] == first
    passage_url = reverse("relevance-passage", args=[slot.pk, first.turn_id, 0])
    assert f'action="{passage_url}"' in page.content.decode()
    assert f'data-url="{passage_url}"' in page.content.decode()


def test_the_next_unit_form_closes_a_held_unit_with_nothing_left_and_opens_the_next(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=1, n_ptkb=0)
    client.force_login(alice)
    held = work_lease(assignment=assignment, user=alice)
    entry = PoolEntry.objects.get(pool=assignment.pool, turn_id=held.unit.turn_pks[0])
    # Graded by a script that never asked for the next passage: the copy is still open.
    work_grade(user=alice, slot_pk=held.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=3)

    opened = client.post(reverse("relevance-next", args=[assignment.pk]))

    assert opened.status_code == 302
    following = WorkSlot.objects.get(assessor=alice, completed_at__isnull=True)
    assert following.pk != held.pk
    assert opened["Location"] == reverse("relevance-resume", args=[following.pk])
    held.refresh_from_db()
    assert held.completed_at is not None


def _read_pages(client, assignment, slot=None):
    """Every GET an assessor or an organiser makes on the relevance and nugget pages."""
    collection = assignment.pool.collection
    turn = collection.turns.order_by("position").first()
    urls = [
        reverse("relevance-queue"),
        reverse("nuggets-turns", args=[collection.name]),
        reverse("nuggets-turn", args=[collection.name, turn.turn_id]),
        reverse("nuggets-gold", args=[collection.name, turn.turn_id]),
        reverse("nuggets-stats", args=[collection.name]),
    ]
    if slot is not None:
        urls += [
            reverse("relevance-resume", args=[slot.pk]),
            reverse("relevance-passage", args=[slot.pk, slot.unit.turn_pks[0], 0]),
            reverse("relevance-ptkb", args=[slot.pk, slot.unit.turn_pks[0]]),
        ]
    return {url: client.get(url).status_code for url in urls}


def test_an_organiser_reading_the_assessor_pages_gets_no_judge(client):
    organiser = OrganiserFactory()
    assignment = relevance_campaign(assessors=[UserFactory()], n_turns=1, n_passages=2, n_ptkb=1)
    client.force_login(organiser)

    statuses = _read_pages(client, assignment)

    assert set(statuses.values()) == {200}, statuses
    assert not Judge.objects.filter(user=organiser).exists()


def test_an_assessor_reading_their_pages_gets_no_judge_until_they_label(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=1)
    slot = work_lease(assignment=assignment, user=alice)
    client.force_login(alice)

    statuses = _read_pages(client, assignment, slot)
    assert set(statuses.values()) == {200}, statuses
    assert not Judge.objects.filter(user=alice).exists()

    graded = client.post(reverse("relevance-passage", args=[slot.pk, slot.unit.turn_pks[0], 0]), {"grade": 2})
    assert graded.status_code == 302
    assert Judge.objects.get(user=alice).name == f"assessor:{alice.username}"


def _counted(slot) -> tuple[int, int]:
    """A completed copy's pairs and its assessor's grades of them, counted from the rows."""
    pairs = {
        (turn_pk, passage_id)
        for turn_pk, passage_id in PoolEntry.objects.filter(
            pool=slot.assignment.pool, turn_id__in=slot.unit.turn_pks
        ).values_list("turn_id", "passage_id")
    }
    graded = set(
        RelevanceJudgment.objects.filter(
            judge__user=slot.assessor, turn_id__in=slot.unit.turn_pks
        ).values_list("turn_id", "passage_id")
    )
    return len(pairs), len(pairs & graded)


def test_a_copy_keeps_its_pair_counts_however_it_completes(client):
    alice = UserFactory()
    with_ptkb = relevance_campaign(assessors=[alice], n_turns=3, n_passages=3, n_ptkb=1)
    judge = judge_for_assessor(user=alice)
    # Closed by its PTKB step (work_ptkb_submit) after its passages.
    _complete_units(with_ptkb, alice, 2)
    # Closed by the next-unit rules (work_next), which close a copy with nothing left to answer.
    slot = work_lease(assignment=with_ptkb, user=alice)
    turn = Turn.objects.get(pk=slot.unit.turn_pks[0])
    work_ptkb_submit(slot=slot, judge=judge, turn=turn, answers={s.pk: False for s in turn.topic.ptkb.all()})
    for entry in PoolEntry.objects.filter(pool=with_ptkb.pool, turn_id__in=slot.unit.turn_pks):
        work_grade(user=alice, slot_pk=slot.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=3)
    work_next(user=alice, assignment_pk=with_ptkb.pk, slot_pk=slot.pk)

    completed = list(
        WorkSlot.objects.filter(assessor=alice, completed_at__isnull=False).select_related("unit")
    )

    assert len(completed) == 3
    for done in completed:
        assert (done.pairs_shown, done.pairs_judged) == _counted(done) == (3, 3)
    client.force_login(alice)
    _queries, page = _queue_queries(client)
    assert "you completed 3 units (9 passages judged)" in page


def test_a_copy_closed_with_passages_left_keeps_what_was_graded(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=4, n_ptkb=0)
    judge = judge_for_assessor(user=alice)
    slot = work_lease(assignment=assignment, user=alice)
    entry = PoolEntry.objects.filter(pool=assignment.pool, turn_id__in=slot.unit.turn_pks).first()
    work_grade(user=alice, slot_pk=slot.pk, turn_pk=entry.turn_id, passage_id=entry.passage_id, grade=1)

    assert work_close(slot=slot, judge=judge, passages_done=True)

    slot.refresh_from_db()
    assert (slot.pairs_shown, slot.pairs_judged) == _counted(slot) == (4, 1)
