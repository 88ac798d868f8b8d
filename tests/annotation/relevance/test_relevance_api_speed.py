"""The assessor JSON loop (next + grade) stays cheap and keeps its guarantees while being cheap.

Both clients of the loop are pinned: scripts (token) and the assessor page (session cookie + CSRF
header). The query budget is pinned so that it cannot creep back: bench/bench_assessors.py measures
what it buys under 50 simulated assessors.
"""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation.models import Judge, PoolEntry, RelevanceJudgment, WorkSlot
from annotation.relevance.services import NextKind, work_lease, work_next
from annotation.relevance.writer import relevance_judgment_submit
from tests.concurrency import at_the_same_instant
from tests.factories import UserFactory, relevance_campaign

pytestmark = pytest.mark.django_db


def _token_client(client, user):
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.create(user=user).key}"
    return client


def _next(client, assignment):
    return client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")


def _grade(client, slot_pk, turn_pk, passage_id, grade=2, time_spent_ms=None):
    return client.post(
        reverse("relevance-api-grade", args=[slot_pk]),
        {"turn_pk": turn_pk, "passage_id": passage_id, "grade": grade, "time_spent_ms": time_spent_ms},
        content_type="application/json",
    )


def test_a_scripted_loop_runs_three_queries_per_request(client, django_assert_max_num_queries):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=5, n_ptkb=0)
    client = _token_client(client, alice)
    first = _next(client, assignment).json()  # leases the unit and creates the judge: not the steady state
    assert _grade(client, first["slot"], first["turn_pk"], first["passage_id"]).status_code == 201

    # next: the token with its user and judge, the held copy (with the membership check), the next entry
    # with its text. grade: the token, the copy + membership + pooled pair + judge, one upsert.
    with django_assert_max_num_queries(3):
        step = _next(client, assignment)
    with django_assert_max_num_queries(3):
        graded = _grade(client, step.json()["slot"], step.json()["turn_pk"], step.json()["passage_id"])

    assert step.status_code == 200
    assert step.json()["passage_id"] != first["passage_id"]
    assert graded.status_code == 201
    assert graded.json() == {
        "turn_pk": step.json()["turn_pk"],
        "passage_id": step.json()["passage_id"],
        "grade": 2,
    }
    assert RelevanceJudgment.objects.filter(judge__user=alice).count() == 2


def test_a_scripted_loop_grading_with_next_is_one_request_of_three_or_four_queries(
    client, django_assert_max_num_queries
):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=3, n_ptkb=0)
    client = _token_client(client, alice)
    url = reverse("relevance-api-grade", args=[0]).replace("/0/", "/{}/")

    def grade(step):
        body = {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2, "next": True}
        return client.post(url.format(step["slot"]), body, content_type="application/json")

    step = _next(client, assignment).json()
    step = grade(step).json()["next"]  # creates the judge: not the steady state
    # The token with its user and judge, the copy + membership + pooled pair + judge, the upsert, the
    # next passage; on PostgreSQL the copy and the next passage are one statement.
    with django_assert_max_num_queries(3):
        graded = grade(step)
    last = grade(graded.json()["next"])
    following = _next(client, assignment).json()  # the unit is closed: the next one is leased

    assert graded.status_code == 201
    assert graded.json()["next"]["index"] == 2
    assert (last.json()["next"], last.json()["unit_complete"]) == (None, True)
    assert following["slot"] != step["slot"] and following["index"] == 0
    assert WorkSlot.objects.get(pk=step["slot"]).completed_at is not None
    assert RelevanceJudgment.objects.filter(judge__user=alice).count() == 3


def test_the_assessor_pages_judgment_is_one_request_of_four_or_five_queries_with_session_and_csrf_header(
    django_assert_max_num_queries,
):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    # The unit's page: its resume URL shows the first unanswered passage itself.
    page = browser.get(reverse("relevance-resume", args=[work_lease(assignment=assignment, user=alice).pk]))
    assert page.status_code == 200
    headers = {"HTTP_X_CSRFTOKEN": page.cookies["csrftoken"].value}
    slot, entry = page.context["slot"].pk, page.context["entry"]
    url = reverse("relevance-api-grade", args=[slot])

    def grade(turn_pk, passage_id, value):
        body = {
            "turn_pk": turn_pk,
            "passage_id": passage_id,
            "grade": value,
            "time_spent_ms": 10,
            "next": True,
        }
        return browser.post(url, body, content_type="application/json", **headers)

    assert grade(entry.turn_id, entry.passage_id, 1).status_code == 201  # creates the judge
    second = grade(entry.turn_id, entry.passage_id, 2).json()["next"]
    # The session, its user, the copy + membership + pooled pair + judge, the upsert, the next passage;
    # on PostgreSQL the copy, the upsert and the next passage are one statement (relevance/grade_sql.py),
    # which checks the user taken from memory too (core.remembered).
    with django_assert_max_num_queries(2):
        graded = grade(second["turn_pk"], second["passage_id"], 3)
    third = graded.json()["next"]
    last = grade(third["turn_pk"], third["passage_id"], 4)

    assert graded.status_code == 201
    assert second["slot"] == slot and second["index"] == 1
    assert second["url"] == reverse("relevance-passage", args=[slot, second["turn_pk"], 1])
    assert (graded.json()["grade"], third["index"]) == (3, 2)
    assert last.status_code == 201
    assert (graded.json()["unit_complete"], last.json()["next"], last.json()["unit_complete"]) == (
        False,
        None,
        True,
    )
    assert WorkSlot.objects.get(pk=slot).completed_at is not None  # closed with the last grade
    grades = dict(RelevanceJudgment.objects.filter(judge__user=alice).values_list("passage_id", "grade"))
    assert grades == {entry.passage_id: 2, second["passage_id"]: 3, third["passage_id"]: 4}


def test_a_grade_asking_for_next_leaves_a_unit_with_its_ptkb_step_open(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=2)
    client.force_login(alice)
    step = _next(client, assignment).json()

    graded = client.post(
        reverse("relevance-api-grade", args=[step["slot"]]),
        {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 2, "next": True},
        content_type="application/json",
    )

    assert graded.status_code == 201
    assert (graded.json()["next"], graded.json()["unit_complete"]) == (None, False)
    assert WorkSlot.objects.get(pk=step["slot"]).completed_at is None
    assert RelevanceJudgment.objects.get().grade == 2


def test_on_its_unit_the_page_gets_204_when_the_unit_is_complete_and_nothing_more_is_leased(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=1, n_ptkb=0)
    client.force_login(alice)
    first = _next(client, assignment).json()
    assert _grade(client, first["slot"], first["turn_pk"], first["passage_id"]).status_code == 201

    done = client.post(
        reverse("relevance-api-next", args=[assignment.pk]),
        {"slot": first["slot"]},
        content_type="application/json",
    )

    assert done.status_code == 204
    assert WorkSlot.objects.get(pk=first["slot"]).completed_at is not None
    assert WorkSlot.objects.filter(assessor=alice).count() == 1


def test_an_assessor_removed_from_the_assignment_gets_404_for_the_unit_they_hold(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()
    assert _grade(client, step["slot"], step["turn_pk"], step["passage_id"]).status_code == 201
    WorkSlot.objects.filter(pk=step["slot"]).update(leased_until=timezone.now() + timedelta(minutes=1))
    assignment.assessors.remove(alice)

    regrade = _grade(client, step["slot"], step["turn_pk"], step["passage_id"], grade=4)
    nxt = _next(client, assignment)

    assert regrade.status_code == 404
    assert nxt.status_code == 404
    assert RelevanceJudgment.objects.get().grade == 2
    slot = WorkSlot.objects.get(pk=step["slot"])
    assert slot.leased_until < timezone.now() + timedelta(minutes=2)  # not renewed


def test_the_first_token_request_of_an_assessor_creates_their_judge(client):
    alice = UserFactory(username="alice")
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _token_client(client, alice)

    step = _next(client, assignment)
    graded = _grade(client, step.json()["slot"], step.json()["turn_pk"], step.json()["passage_id"], grade=3)

    assert step.status_code == 200
    assert graded.status_code == 201
    assert graded.json() == {
        "turn_pk": step.json()["turn_pk"],
        "passage_id": step.json()["passage_id"],
        "grade": 3,
    }
    judge = Judge.objects.get(user=alice)
    assert (judge.name, judge.kind) == ("assessor:alice", Judge.Kind.ASSESSOR)
    assert RelevanceJudgment.objects.get().judge == judge


def test_it_rejects_a_bad_or_inactive_token(client):
    alice = UserFactory(is_active=False)
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    client = _token_client(client, alice)

    inactive = _next(client, assignment)
    client.defaults["HTTP_AUTHORIZATION"] = "Token not-a-token"
    bad = _next(client, assignment)

    assert inactive.status_code == 401
    assert "inactive" in inactive.json()["detail"]
    assert bad.status_code == 401
    assert bad.json()["detail"] == "Invalid token."
    assert not WorkSlot.objects.filter(assessor__isnull=False).exists()


def test_grading_through_the_api_validates_ownership_and_the_unit(client):
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=2, n_ptkb=0)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()
    mine = WorkSlot.objects.get(pk=step["slot"])
    other_unit_entry = (
        PoolEntry.objects.filter(pool=assignment.pool).exclude(turn_id__in=mine.unit.turn_pks).first()
    )
    bobs = _token_client(Client(), bob)
    bobs_step = _next(bobs, assignment).json()

    into_bobs_unit = _grade(client, bobs_step["slot"], bobs_step["turn_pk"], bobs_step["passage_id"])
    other_unit = _grade(client, step["slot"], other_unit_entry.turn_id, other_unit_entry.passage_id)
    unpooled = _grade(client, step["slot"], step["turn_pk"], "not-pooled")
    no_such_slot = _grade(client, 10_000_000, step["turn_pk"], step["passage_id"])

    assert into_bobs_unit.status_code == 404
    assert other_unit.status_code == 400
    assert other_unit.json()["fields"] == {
        "passage_id": ["this passage is not pooled for a turn of your unit"]
    }
    assert unpooled.status_code == 400
    assert no_such_slot.status_code == 404
    assert not RelevanceJudgment.objects.exists()


def test_regrading_through_the_api_revises_in_place_and_adds_up_time(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()

    first = _grade(client, step["slot"], step["turn_pk"], step["passage_id"], grade=1, time_spent_ms=700)
    again = _grade(client, step["slot"], step["turn_pk"], step["passage_id"], grade=4, time_spent_ms=300)
    untimed = _grade(client, step["slot"], step["turn_pk"], step["passage_id"], grade=3)

    assert (first.status_code, again.status_code, untimed.status_code) == (201, 201, 201)
    assert untimed.json()["grade"] == 3
    judgment = RelevanceJudgment.objects.get()
    assert (judgment.grade, judgment.time_spent_ms) == (3, 1000)
    assert judgment.updated_at >= judgment.created_at


def test_the_next_call_closes_a_finished_unit_and_leases_the_next(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=2, n_ptkb=0)
    client = _token_client(client, alice)
    seen = []
    for _ in range(4):
        step = _next(client, assignment).json()
        seen.append((step["slot"], step["turn_pk"], step["passage_id"]))
        assert _grade(client, step["slot"], step["turn_pk"], step["passage_id"]).status_code == 201
    done = _next(client, assignment)

    assert done.status_code == 204
    assert len(set(seen)) == 4
    assert len({slot for slot, _, _ in seen}) == 2
    assert WorkSlot.objects.filter(assessor=alice, completed_at__isnull=False).count() == 2
    assert RelevanceJudgment.objects.filter(judge__user=alice).count() == 4


def test_moving_to_the_next_unit_closes_the_finished_one_and_leases_the_next(
    client, django_assert_max_num_queries
):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=1, n_ptkb=0)
    client = _token_client(client, alice)
    first = _next(client, assignment).json()  # leases the first unit and creates the judge
    assert _grade(client, first["slot"], first["turn_pk"], first["passage_id"]).status_code == 201

    # Once per unit: the walk over its screens, the close, the claim in a transaction, the next entry;
    # on PostgreSQL the steady state's one statement first, which finds nothing left in the held unit.
    with django_assert_max_num_queries(13):
        step = _next(client, assignment)

    assert step.status_code == 200
    assert step.json()["slot"] != first["slot"]
    assert step.json()["turn_pk"] != first["turn_pk"]
    closed = WorkSlot.objects.get(pk=first["slot"])
    claimed = WorkSlot.objects.get(pk=step.json()["slot"])
    assert closed.completed_at is not None
    assert (claimed.assessor, claimed.completed_at) == (alice, None)
    assert claimed.started_at is not None
    assert claimed.leased_until > timezone.now() + timedelta(minutes=assignment.lease_minutes * 0.9)


def test_opening_the_next_unit_after_a_grade_closed_the_last_one_reads_the_held_copy_once(
    client, django_assert_max_num_queries
):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=1, n_ptkb=0)
    client = _token_client(client, alice)
    first = _next(client, assignment).json()
    done = client.post(
        reverse("relevance-api-grade", args=[first["slot"]]),
        {"turn_pk": first["turn_pk"], "passage_id": first["passage_id"], "grade": 2, "next": True},
        content_type="application/json",
    )
    assert done.json()["unit_complete"] is True

    # On PostgreSQL the statement (no open copy held), the assignment, the claim in a transaction, the
    # next entry: the held copy is not read again by the ORM after the statement found none (10 before).
    with django_assert_max_num_queries(9):
        step = _next(client, assignment)

    assert step.status_code == 200
    assert step.json()["slot"] != first["slot"]


def test_a_unit_with_its_ptkb_step_left_stays_open_and_the_api_says_where_to_do_it(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=1, n_ptkb=2)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()
    assert _grade(client, step["slot"], step["turn_pk"], step["passage_id"]).status_code == 201

    left = _next(client, assignment)

    assert left.status_code == 409
    assert left.json()["slot"] == step["slot"]
    assert left.json()["url"] == reverse("relevance-resume", args=[step["slot"]])
    assert WorkSlot.objects.get(pk=step["slot"]).completed_at is None
    assert WorkSlot.objects.filter(assessor=alice).count() == 1


def test_an_assessor_outside_the_assignment_gets_404_and_claims_nothing(client):
    alice, mallory = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=1, n_ptkb=0)
    other = relevance_campaign(assessors=[mallory], n_turns=1, n_passages=1, n_ptkb=0)
    client = _token_client(client, mallory)
    own = _next(client, other).json()  # mallory has a judge and works elsewhere
    assert _grade(client, own["slot"], own["turn_pk"], own["passage_id"]).status_code == 201

    refused = _next(client, assignment)

    assert refused.status_code == 404
    assert not WorkSlot.objects.filter(unit__assignment=assignment, assessor__isnull=False).exists()


def test_with_redundancy_an_assessor_never_gets_a_second_copy_of_a_unit_they_finished(client):
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=1, n_ptkb=0, redundancy=2)
    client = _token_client(client, alice)
    units = []
    while (step := _next(client, assignment)).status_code == 200:
        data = step.json()
        units.append(WorkSlot.objects.get(pk=data["slot"]).unit_id)
        assert _grade(client, data["slot"], data["turn_pk"], data["passage_id"]).status_code == 201
        assert len(units) <= 2

    assert step.status_code == 204
    assert len(set(units)) == 2
    assert WorkSlot.objects.filter(unit__assignment=assignment, assessor__isnull=True).count() == 2


@pytest.mark.django_db(transaction=True)
def test_assessors_moving_on_at_the_same_instant_never_claim_the_same_unit_on_postgresql():
    users = [UserFactory() for _ in range(12)]
    assignment = relevance_campaign(assessors=users, n_turns=8, n_passages=1, n_ptkb=0, redundancy=1)
    for user in users:
        Judge.objects.create(name=f"assessor:{user.username}", kind=Judge.Kind.ASSESSOR, user=user)

    def claim(user):
        step = work_next(user=user, assignment_pk=assignment.pk)
        return step.slot_pk if step.kind is NextKind.PASSAGE else None

    claimed, errors = at_the_same_instant(claim, users)
    results = dict(zip([u.pk for u in users], claimed, strict=True))

    assert errors == []
    granted = [slot for slot in results.values() if slot is not None]
    assert len(granted) == 8
    assert len(set(granted)) == 8
    assert list(results.values()).count(None) == 4
    holders = WorkSlot.objects.filter(unit__assignment=assignment, assessor__isnull=False)
    assert sorted(holders.values_list("pk", flat=True)) == sorted(granted)
    assert {results[s.assessor_id] for s in holders} == set(granted)


@pytest.mark.django_db(transaction=True)
def test_a_claim_skips_a_copy_another_transaction_has_locked_instead_of_waiting_on_postgresql():
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=1, n_ptkb=0)
    first, second = WorkSlot.objects.filter(unit__assignment=assignment).order_by("unit__position")
    locked, release = threading.Event(), threading.Event()

    def hold_the_first_copy():
        from django.db import connection as thread_connection
        from django.db import transaction

        try:
            with transaction.atomic():
                WorkSlot.objects.select_for_update().get(pk=first.pk)
                locked.set()
                release.wait(10)
        finally:
            thread_connection.close()

    holder = threading.Thread(target=hold_the_first_copy)
    holder.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = '2s'")  # waiting on the lock would fail here
        claimed = work_lease(assignment=assignment, user=alice).pk
    finally:
        release.set()
        holder.join()
        with connection.cursor() as cursor:
            cursor.execute("RESET statement_timeout")

    assert claimed == second.pk
    assert WorkSlot.objects.get(pk=first.pk).assessor is None


@pytest.mark.django_db(transaction=True)
def test_the_same_grade_submitted_at_the_same_instant_ends_in_one_row_on_postgresql():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    entry = PoolEntry.objects.select_related("turn").get(pool=assignment.pool)
    judge = Judge.objects.create(name="assessor:racer", kind=Judge.Kind.ASSESSOR, user=alice)

    def submit(grade):
        relevance_judgment_submit(
            judge=judge, turn=entry.turn, passage_id=entry.passage_id, grade=grade, time_spent_ms=10
        )

    _, errors = at_the_same_instant(submit, [i % 5 for i in range(8)])

    assert errors == []
    judgment = RelevanceJudgment.objects.get()
    assert judgment.time_spent_ms == 80
    assert judgment.grade in {0, 1, 2, 3, 4}


def test_it_accepts_what_the_serializer_accepts_beyond_plain_json_numbers(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()
    url = reverse("relevance-api-grade", args=[step["slot"]])

    # Numbers as strings and a padded passage id: DRF's fields coerce and trim them.
    body = {"turn_pk": str(step["turn_pk"]), "passage_id": f" {step['passage_id']} ", "grade": "3"}
    graded = client.post(url, body, content_type="application/json")
    boolean = client.post(url, {**body, "grade": True}, content_type="application/json")
    too_long = client.post(url, {**body, "time_spent_ms": 86_400_001}, content_type="application/json")

    assert graded.status_code == 201
    assert graded.json() == {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 3}
    assert boolean.status_code == 400
    assert "grade" in boolean.json()["fields"]
    assert too_long.status_code == 400
    assert "time_spent_ms" in too_long.json()["fields"]
    assert RelevanceJudgment.objects.get().grade == 3


def test_a_copy_taken_over_after_its_lease_ran_out_is_no_longer_gradable_by_its_first_holder(client):
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=1, n_passages=2, n_ptkb=0)
    alices = _token_client(client, alice)
    step = _next(alices, assignment).json()
    WorkSlot.objects.filter(pk=step["slot"]).update(leased_until=timezone.now() - timedelta(minutes=1))
    bobs = _token_client(Client(), bob)
    bobs_step = _next(bobs, assignment).json()

    late = _grade(alices, step["slot"], step["turn_pk"], step["passage_id"])

    assert bobs_step["slot"] == step["slot"]
    assert late.status_code == 404
    assert not RelevanceJudgment.objects.exists()


def test_asking_for_the_next_passage_renews_a_lease_running_out_and_not_a_fresh_one(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()
    assert _grade(client, step["slot"], step["turn_pk"], step["passage_id"]).status_code == 201
    fresh = WorkSlot.objects.get(pk=step["slot"]).leased_until
    almost_out = timezone.now() + timedelta(minutes=assignment.lease_minutes / 4)
    _next(client, assignment)
    unchanged = WorkSlot.objects.get(pk=step["slot"]).leased_until
    WorkSlot.objects.filter(pk=step["slot"]).update(leased_until=almost_out)

    again = _next(client, assignment)

    assert again.status_code == 200
    assert unchanged == fresh
    renewed = WorkSlot.objects.get(pk=step["slot"]).leased_until
    assert renewed > timezone.now() + timedelta(minutes=assignment.lease_minutes * 0.9)


def test_a_session_post_without_the_csrf_token_is_refused(alice_client_with_csrf_checks):
    client, assignment = alice_client_with_csrf_checks

    refused = _next(client, assignment)

    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert not WorkSlot.objects.filter(assessor__isnull=False).exists()


@pytest.fixture
def alice_client_with_csrf_checks():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    return client, assignment


@pytest.mark.django_db(transaction=True)
def test_the_loop_runs_on_prepared_statements_and_leaves_the_planner_alone_on_postgresql(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=8, n_ptkb=0)
    client = _token_client(client, alice)
    for _ in range(8):
        step = _next(client, assignment).json()
        assert _grade(client, step["slot"], step["turn_pk"], step["passage_id"]).status_code == 201

    # The test client's requests share this thread's connection: psycopg prepared what ran often on it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]
        cursor.execute("SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')")
        planner = cursor.fetchone()

    assert any("annotation_poolentry" in statement for statement in prepared)
    assert any("annotation_relevancejudgment" in statement for statement in prepared)
    assert planner == ("auto", "on")
    assert RelevanceJudgment.objects.filter(judge__user=alice).count() == 8


def test_a_script_over_the_rate_gets_429_and_the_page_is_not_throttled(client, monkeypatch):
    from django.core.cache import cache
    from rest_framework.throttling import SimpleRateThrottle

    cache.clear()
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "2/minute", "anon": "2/minute"})
    alice, bob = UserFactory(), UserFactory()
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=2, n_passages=3, n_ptkb=0)
    script = _token_client(client, alice)
    page = Client()
    page.force_login(bob)

    scripted = [_next(script, assignment).status_code for _ in range(3)]
    paged = [_next(page, assignment).status_code for _ in range(3)]

    assert scripted == [200, 200, 429]
    assert paged == [200, 200, 200]
    limited = _next(script, assignment)
    assert int(limited["Retry-After"]) > 0
    assert "throttled" in limited.json()["detail"].lower()
    assert WorkSlot.objects.filter(assessor__in=[alice, bob]).count() == 2


def test_without_credentials_it_answers_401_json_that_asks_for_a_token(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)

    refused = _next(client, assignment)
    client.force_login(alice)
    wrong_method = client.get(reverse("relevance-api-next", args=[assignment.pk]))

    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == "Token"
    assert refused.json() == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {"detail": 'Method "GET" not allowed.', "code": "method_not_allowed"}
    assert not WorkSlot.objects.filter(assessor__isnull=False).exists()


def test_it_answers_400_with_the_reason_for_each_bad_field(client):
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=1, n_ptkb=0)
    client = _token_client(client, alice)
    step = _next(client, assignment).json()
    url = reverse("relevance-api-grade", args=[step["slot"]])

    empty = client.post(url, {}, content_type="application/json")
    bad = client.post(
        url,
        {"turn_pk": "x", "passage_id": "  ", "grade": 2.5, "time_spent_ms": -1, "next": "maybe"},
        content_type="application/json",
    )
    not_json = client.post(url, "{", content_type="application/json")
    a_list = client.post(url, [1, 2], content_type="application/json")

    assert empty.status_code == 400
    assert empty.json()["code"] == "invalid"
    assert empty.json()["fields"] == {
        "turn_pk": ["This field is required."],
        "passage_id": ["This field is required."],
        "grade": ["This field is required."],
    }
    assert bad.status_code == 400
    assert bad.json()["fields"] == {
        "turn_pk": ["A valid integer is required."],
        "passage_id": ["This field may not be blank."],
        "grade": ['"2.5" is not a valid choice.'],
        "time_spent_ms": ["Ensure this value is greater than or equal to 0."],
        "next": ["Must be a valid boolean."],
    }
    assert not_json.status_code == 400
    assert "JSON parse error" in not_json.json()["detail"]
    assert not_json.json()["code"] == "parse_error"
    assert a_list.status_code == 400
    assert not RelevanceJudgment.objects.exists()
