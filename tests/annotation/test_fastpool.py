"""The assessor API's statements on the per-process pool of PostgreSQL connections (annotation.fastpool)."""

from __future__ import annotations

import threading

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation import fastpool
from annotation.models import Judge, RelevanceJudgment, WorkSlot
from annotation.relevance import fast_sql as assignment_module
from annotation.relevance.work import next_passage_entry
from tests.concurrency import at_the_same_instant
from tests.factories import UserFactory, relevance_campaign

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def fresh_pool():
    fastpool.close()
    yield
    fastpool.close()


def _client(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")


def _next(client, assignment):
    return client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")


def _grade(client, step, grade=3):
    return client.post(
        reverse("relevance-api-grade", args=[step["slot"]]),
        {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": grade, "time_spent_ms": 5},
        content_type="application/json",
    )


def _pooled_statements() -> list[str]:
    (wrapper,) = fastpool.pool().opened
    return [name for (name,) in wrapper.connection.execute("SELECT name FROM pg_prepared_statements")]


def _statements_on_djangos_connection() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '/* assay %'")
        return cursor.fetchone()[0]


def test_outside_a_transaction_an_assessor_works_through_a_unit_on_the_pool_in_presentation_order():
    assert connection.vendor == "postgresql"
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=2, n_passages=4, n_ptkb=0)
    client = _client(alice)
    first = _next(client, assignment).json()  # leases through the ORM path and creates the judge
    judge = Judge.objects.get(user=alice)
    slot = WorkSlot.objects.select_related("unit__assignment").get(pk=first["slot"])
    seen = []
    step = first
    while True:
        expected = next_passage_entry(slot=slot, judge=judge)
        if expected is None:
            break
        assert (step["turn_pk"], step["passage_id"]) == (expected.turn_id, expected.passage_id)
        assert _grade(client, step).status_code == 201
        seen.append(step["passage_id"])
        answer = _next(client, assignment)
        if answer.status_code != 200 or answer.json()["slot"] != slot.pk:
            break
        step = answer.json()

    assert len(seen) == 4 and len(set(seen)) == 4
    assert RelevanceJudgment.objects.filter(judge=judge, grade=3).count() == 4
    # On the pool: one connection, holding the statements; Django's own connection prepared none.
    assert {name.rsplit("_", 1)[0] for name in _pooled_statements()} >= {"assay_next", "assay_grade"}
    assert _statements_on_djangos_connection() == 0


def test_inside_a_transaction_the_statements_run_on_djangos_connection_and_see_its_rows():
    alice = UserFactory()
    with transaction.atomic():
        # Rows not yet committed: a pooled connection could not see them.
        assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
        Judge.objects.create(name="assessor:alice", kind=Judge.Kind.ASSESSOR, user=alice)
        key = Token.objects.create(user=alice).key
        claimed = assignment_module.fast_advance(token_key=key, assignment_pk=assignment.pk)
        step = assignment_module.fast_next_step(token_key=key, assignment_pk=assignment.pk)
        prepared_here = _statements_on_djangos_connection()

    assert claimed is not None and step is not None and step.slot == claimed
    assert prepared_here >= 2
    assert fastpool.pool().opened == []


def test_with_no_pool_connections_set_the_statements_run_on_djangos_connection(settings):
    settings.ASSAY_FAST_PATH_CONNECTIONS = 0
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _client(alice)
    assert _grade(client, _next(client, assignment).json()).status_code == 201
    assert _next(client, assignment).status_code == 200

    assert fastpool.pool() is None
    assert _statements_on_djangos_connection() >= 1


def test_many_threads_at_once_share_at_most_the_pools_connections(settings):
    settings.ASSAY_FAST_PATH_CONNECTIONS = 2
    users = [UserFactory() for _ in range(6)]
    assignment = relevance_campaign(assessors=users, n_turns=6, n_passages=2, n_ptkb=0)
    keys = []
    for user in users:
        Judge.objects.create(name=f"assessor:{user.username}", kind=Judge.Kind.ASSESSOR, user=user)
        keys.append(Token.objects.create(user=user).key)

    def claim_and_ask(key):
        assignment_module.fast_advance(token_key=key, assignment_pk=assignment.pk)
        return assignment_module.fast_next_step(token_key=key, assignment_pk=assignment.pk)

    steps, errors = at_the_same_instant(claim_and_ask, keys)

    assert errors == []
    assert len({step.slot for step in steps}) == 6  # six assessors, six different copies
    assert 1 <= len(fastpool.pool().opened) <= 2


def test_a_connection_the_server_closed_fails_its_request_and_is_replaced():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    client = _client(alice)
    step = _next(client, assignment).json()
    assert _grade(client, step).status_code == 201
    (wrapper,) = fastpool.pool().opened
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [wrapper.connection.info.backend_pid])

    with pytest.raises(DatabaseError):
        _next(client, assignment)
    answer = _next(client, assignment)

    assert answer.status_code == 200
    assert answer.json()["passage_id"] != step["passage_id"]
    assert fastpool.pool().opened != [wrapper]


def test_pooled_statements_are_prepared_again_under_a_new_name_and_the_old_one_let_go(monkeypatch):
    monkeypatch.setattr(assignment_module, "REPREPARE_EVERY", 2)
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=4, n_ptkb=0)
    client = _client(alice)
    graded = set()
    for _ in range(4):
        step = _next(client, assignment).json()
        assert _grade(client, step).status_code == 201
        graded.add(step["passage_id"])
    names = _pooled_statements()
    (wrapper,) = fastpool.pool().opened

    assert len(graded) == 4
    assert _next(client, assignment).status_code == 204
    # Four grades at two runs a generation: generation 1 now, generation 0 deallocated.
    assert "assay_grade_1" in names and "assay_grade_0" not in names
    assert wrapper.connection.execute("SHOW enable_seqscan").fetchone()[0] == "on"
    assert wrapper.connection.execute("SHOW plan_cache_mode").fetchone()[0] == "force_generic_plan"


def test_a_statement_whose_first_run_failed_stays_prepared_and_answers_the_next_call():
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    client = _client(alice)
    step = _next(client, assignment).json()  # the ORM path: the pool has not run `grade` yet
    key = Token.objects.get(user=alice).key

    def grade(value):
        return assignment_module.fast_grade_submit(
            token_key=key,
            slot_pk=step["slot"],
            turn_pk=step["turn_pk"],
            passage_id=step["passage_id"],
            grade=value,
            time_spent_ms=None,
        )

    with pytest.raises(DatabaseError, match="out of range"):
        grade(70_000)  # not a smallint: the first run of `grade` on this connection fails
    assert grade(4) == (step["turn_pk"], step["passage_id"], 4)
    assert RelevanceJudgment.objects.get().grade == 4


def test_preparing_again_goes_on_when_the_old_statement_is_already_gone(monkeypatch):
    monkeypatch.setattr(assignment_module, "REPREPARE_EVERY", 1)
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=3, n_ptkb=0)
    client = _client(alice)
    _next(client, assignment)  # the ORM path leases and creates the judge
    first = _next(client, assignment)  # `next` prepared on the pooled connection
    (wrapper,) = fastpool.pool().opened
    wrapper.connection.execute("DEALLOCATE ALL")

    again = _next(client, assignment)  # its generation is used up: deallocate (gone already), prepare anew

    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert [name for name in _pooled_statements() if name.startswith("assay_next_")] != []


def test_a_thread_waiting_for_a_connection_gets_a_new_one_when_the_busy_one_is_dropped(settings):
    settings.ASSAY_FAST_PATH_CONNECTIONS = 1
    pooled = fastpool.pool()
    busy = pooled.take()
    got = []
    waiter = threading.Thread(target=lambda: got.append(pooled.take()))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()  # the one connection is busy: it waits

    pooled.drop(busy)  # say the server closed it
    waiter.join(10)

    assert not waiter.is_alive()
    assert got[0] is not busy and got[0].connection is not None
    assert pooled.opened == got
    pooled.give_back(got[0])
