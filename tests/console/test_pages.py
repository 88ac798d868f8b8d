"""The organiser's console pages: who may open them, and what each does."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, Collection, Judge, Pool, PtkbJudgment, TopicWork, WorkSlot
from annotation.relevance.io import qrels_lines
from annotation.relevance.pooling import pool_build
from annotation.relevance.services import work_lease
from console.models import ImportJob
from tests.background import tasks_run_ready
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PtkbStatementFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
    UserFactory,
    relevance_campaign,
)

pytestmark = pytest.mark.django_db

TOPICS = [
    {
        "number": "1",
        "title": "Moving <b>abroad</b>",
        "ptkb": {"1": "I live in Lyon.", "2": "I am vegetarian."},
        "turns": [{"turn_id": 1, "utterance": "Where to live?"}, {"turn_id": 2, "utterance": "And eat?"}],
    }
]


def console_urls(collection_name: str, pool_name: str, job_pk: int) -> list[str]:
    args = [collection_name]
    return [
        reverse("console-collection-new"),
        reverse("console-collection", args=args),
        reverse("console-import", args=[collection_name, job_pk]),
        reverse("console-pools", args=args),
        reverse("console-pool", args=[collection_name, pool_name]),
        reverse("console-work", args=args),
        reverse("console-dashboard", args=args),
        reverse("console-exports", args=args),
        reverse("console-export", args=[collection_name, "judgment-log"]),
        reverse("console-people"),
    ]


@pytest.fixture
def every_page(collection):
    pool = Pool.objects.create(collection=collection, name="p", depth=5)
    job = ImportJob.objects.create(collection=collection, kind="topics", file_name="t.json", stored_path="/x")
    return console_urls(collection.name, pool.name, job.pk)


def test_anonymous_visitors_are_sent_to_the_login_page(client, every_page):
    for url in every_page:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_assessors_get_the_403_page_with_the_navigation(client, every_page):
    client.force_login(UserFactory())
    for url in every_page:
        response = client.get(url)
        assert response.status_code == 403, url
        assert b'id="nav-assessor"' in response.content, url
        assert b'id="nav-organiser"' not in response.content, url


def test_organisers_open_every_page(client, organiser, every_page):
    for url in every_page:
        assert client.get(url).status_code == 200, url


def test_the_navigation_separates_the_organiser_menu(client, organiser):
    response = client.get(reverse("home"))
    assert response.status_code == 200
    assert b'id="nav-organiser"' in response.content
    assert b'id="new-collection"' in response.content
    assert b'id="home-jobs"' in response.content


def test_an_assessors_home_lists_no_organiser_things(client):
    client.force_login(UserFactory())
    response = client.get(reverse("home"))
    assert response.status_code == 200
    assert b'id="nav-organiser"' not in response.content
    assert b'id="home-jobs"' not in response.content


# --- Collections and uploads -----------------------------------------------------------------------


def test_it_creates_a_collection(client, organiser):
    response = client.post(reverse("console-collection-new"), {"name": "ikat-24", "description": "x"})
    assert response.status_code == 302
    assert response["Location"] == reverse("console-collection", args=["ikat-24"])
    assert Collection.objects.get(name="ikat-24").description == "x"


def test_it_refuses_a_collection_name_taken(client, organiser, collection):
    response = client.post(reverse("console-collection-new"), {"name": collection.name})
    assert response.status_code == 400
    assert b"already exists" in response.content
    assert Collection.objects.count() == 1


def upload(client, collection, name: str, content: bytes, kind: str, **options):
    return client.post(
        reverse("console-collection", args=[collection.name]),
        {"kind": kind, "file": SimpleUploadedFile(name, content), **options},
        follow=True,
    )


def test_an_upload_shows_what_it_created_by_kind_and_escapes_collection_text(client, organiser, collection):
    response = upload(client, collection, "topics.json", json.dumps(TOPICS).encode(), "topics")

    assert response.status_code == 200
    rows = ImportJob.objects.get().result
    assert [(r["kind"], r["created"]) for r in rows] == [("topics", 1), ("turns", 2), ("PTKB statements", 2)]
    assert b'id="import-done"' in response.content
    assert b"<td>PTKB statements</td><td>2</td>" in response.content
    assert collection.turns.count() == 2
    detail = client.get(reverse("collection-detail", args=[collection.name]))
    assert b"<b>abroad</b>" not in detail.content


def test_the_same_file_twice_shows_unchanged(client, organiser, collection):
    content = json.dumps(TOPICS).encode()
    upload(client, collection, "topics.json", content, "topics")
    before = list(collection.turns.values_list("id", "utterance"))

    response = upload(client, collection, "topics.json", content, "topics")

    assert response.status_code == 200
    assert b'id="import-unchanged"' in response.content
    assert [(r["kind"], r["unchanged"]) for r in ImportJob.objects.first().result] == [
        ("topics", 1),
        ("turns", 2),
        ("PTKB statements", 2),
    ]
    assert list(collection.turns.values_list("id", "utterance")) == before


def test_a_bad_file_shows_file_and_line_and_creates_nothing(client, organiser, collection):
    TurnFactory(topic=TopicFactory(collection=collection, number="1"), position=1, turn_id="1_1")
    qrels = b"1_1 0 doc:1 2\n1_1 0 doc:2 NONE\n"

    response = upload(client, collection, "bad.qrels", qrels, "qrels", judge="nist")

    assert response.status_code == 200
    assert b'id="import-problems"' in response.content
    assert b"bad.qrels:2:" in response.content
    assert b"/assay-imports/" not in response.content
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.FAILED
    assert not Judge.objects.filter(name="nist").exists()
    assert not collection.turns.get().relevance_judgments.exists()


def test_an_upload_of_labels_needs_its_judge(client, organiser, collection):
    response = upload(client, collection, "q.qrels", b"1_1 0 d 1\n", "qrels")
    assert response.status_code == 400
    assert b"needs this" in response.content
    assert not ImportJob.objects.exists()


@pytest.mark.parametrize(
    ("kind", "name", "body", "extra"),
    [
        ("nuggets", "n.jsonl", b"{}\n", {"fmt": "jsonl"}),
        ("qrels", "q.qrels", b"1_1 0 d 1\n", {}),
        ("ptkb-qrels", "p.qrels", b"1_1 0 1 1\n", {}),
        ("support-labels", "s.jsonl", b"{}\n", {}),
    ],
)
def test_label_uploads_refuse_an_assessors_judge(client, organiser, collection, kind, name, body, extra):
    judge = AssessorJudgeFactory()
    response = upload(client, collection, name, body, kind, judge=judge.name, **extra)
    assert response.status_code == 200
    assert b"is an assessor" in response.content
    assert ImportJob.objects.get().status == ImportJob.Status.FAILED


def test_the_status_endpoint_refuses_anyone_but_organisers_in_the_error_shape(client, collection):
    job = ImportJob.objects.create(collection=collection, kind="topics", file_name="t.json", stored_path="/x")
    url = reverse("console-import-status", args=[collection.name, job.pk])

    anonymous = client.get(url)
    client.force_login(UserFactory())
    assessor = client.get(url)

    assert (anonymous.status_code, anonymous.json()["code"]) == (403, "not_authenticated")
    assert (assessor.status_code, assessor.json()["code"]) == (403, "permission_denied")


def test_the_status_endpoint_reaches_an_import_through_its_collection(client, organiser, collection):
    job = ImportJob.objects.create(collection=collection, kind="topics", file_name="t.json", stored_path="/x")

    response = client.get(reverse("console-import-status", args=[CollectionFactory().name, job.pk]))

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_the_status_endpoint_reports_progress(client, organiser, collection):
    job = ImportJob.objects.create(collection=collection, kind="topics", file_name="t.json", stored_path="/x")
    response = client.get(reverse("console-import-status", args=[collection.name, job.pk]))
    assert response.status_code == 200
    assert response.json() == {
        "status": "pending",
        "status_label": "Waiting",
        "percent": 0,
        "done": 0,
        "total": 0,
        "finished": False,
        "reason": "",
    }


def test_a_job_is_reached_through_its_collection(client, organiser, collection):
    job = ImportJob.objects.create(collection=collection, kind="topics", file_name="t.json", stored_path="/x")
    other = CollectionFactory()
    assert client.get(reverse("console-import", args=[other.name, job.pk])).status_code == 404


def test_a_large_upload_runs_in_the_background(client, settings):
    settings.CONSOLE_INLINE_IMPORT_BYTES = 0
    client.force_login(OrganiserFactory())
    collection = CollectionFactory()

    response = client.post(
        reverse("console-collection", args=[collection.name]),
        {"kind": "topics", "file": SimpleUploadedFile("topics.json", json.dumps(TOPICS).encode())},
    )

    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.PENDING
    assert collection.turns.count() == 0  # the page did not import it: its task waits for a worker
    status_url = reverse("console-import-status", args=[collection.name, job.pk])
    assert client.get(status_url).json()["status"] == "pending"
    assert tasks_run_ready() == 1
    assert client.get(status_url).json() == {
        "status": "done",
        "status_label": "Done",
        "percent": 100,
        "done": 1,
        "total": 1,
        "finished": True,
        "reason": "",
    }
    assert collection.turns.count() == 2


def test_the_shared_ikat_2024_files_upload_end_to_end(client, organiser, shared_data, settings):
    # Imported before the page answers, so that this test's transaction sees what the import wrote.
    settings.CONSOLE_INLINE_IMPORT_BYTES = 10 * 1024**2
    collection = CollectionFactory(name="ikat24")
    folder = shared_data / "ikat2024"

    upload(
        client, collection, "2024_test_topics.json", (folder / "2024_test_topics.json").read_bytes(), "topics"
    )
    upload(client, collection, "sample_run.json", (folder / "sample_run.json").read_bytes(), "run")
    response = upload(
        client,
        collection,
        "2024_test_qrels.trec",
        (folder / "2024_test_qrels.trec").read_bytes(),
        "qrels",
        judge="nist",
    )

    assert response.status_code == 200
    topics, run, qrels = reversed(ImportJob.objects.all())
    assert [(r["kind"], r["created"]) for r in topics.result] == [
        ("topics", 17),
        ("turns", 218),
        ("PTKB statements", 288),
    ]
    assert run.status == ImportJob.Status.DONE and run.result[0]["created"] == 218
    assert [(r["kind"], r["created"]) for r in qrels.result] == [("judgments", 20575)]
    assert collection.runs.count() == 1


# --- Pools and work --------------------------------------------------------------------------------


@pytest.fixture
def ranked(collection):
    """Two turns ranked 1..4 by one run; a filter judge grading doc3 relevant and doc4 not."""
    topic = TopicFactory(collection=collection, number="1")
    run = RunFactory(collection=collection)
    llm = JudgeFactory(name="llm-filter", kind=Judge.Kind.LLM)
    for position in (1, 2):
        turn = TurnFactory(topic=topic, position=position)
        RankingFactory(run=run, turn=turn, passage_ids=[f"t{position}d{i}" for i in range(1, 5)])
        RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=f"t{position}d3", grade=3)
        RelevanceJudgmentFactory(judge=llm, turn=turn, passage_id=f"t{position}d4", grade=0)
    return llm


def test_it_builds_an_adaptive_pool_with_the_filter_chosen_from_the_relevance_judges(
    client, organiser, collection, ranked, reports_in_request
):
    page = client.get(reverse("console-pools", args=[collection.name]))
    assert b"llm-filter (4 grades)" in page.content

    response = client.post(
        reverse("console-pools", args=[collection.name]),
        {
            "name": "adaptive4",
            "depth": 4,
            "adaptive": "on",
            "always_depth": 2,
            "filter_judge": ranked.pk,
            "min_grade": 2,
        },
        follow=True,
    )

    assert response.status_code == 200
    assert b"6 pairs over 2 turns; the filter saved 2" in response.content
    assert b'<strong id="pool-saved">2</strong> of 8' in response.content
    assert b"<td>1_1</td><td>3</td><td>2</td><td>1</td><td>1</td>" in response.content
    assert Pool.objects.get(name="adaptive4").entries.count() == 6


def test_the_pool_page_is_computed_on_the_worker_and_again_after_a_grade_of_its_filter(
    client, organiser, collection, ranked
):
    pool = pool_build(
        collection=collection,
        name="adaptive4",
        depth=4,
        turns=list(collection.turns.all()),
        adaptive=True,
        filter_judge=ranked,
        min_grade=2,
        always_depth=2,
    ).pool
    url = reverse("console-pool", args=[collection.name, pool.name])

    computing = client.get(url)
    tasks_run_ready()
    done = client.get(url)
    turn = collection.turns.get(position=1)
    RelevanceJudgmentFactory(judge=ranked, turn=turn, passage_id="t1d3-new", grade=0)
    again = client.get(url)

    assert (
        'id="report-status"' in computing.content.decode() and "pool-saved" not in computing.content.decode()
    )
    assert '<strong id="pool-saved">2</strong> of 8' in done.content.decode()
    # The figures of before the grade, labelled as such, while the current ones are computed.
    assert 'id="report-earlier"' in again.content.decode()
    assert '<strong id="pool-saved">2</strong> of 8' in again.content.decode()


def test_the_pool_page_shows_a_page_of_turns_and_figures_over_all(
    client, organiser, collection, ranked, reports_in_request, monkeypatch
):
    monkeypatch.setattr("console.views.POOL_TURNS_PER_PAGE", 1)
    pool_build(collection=collection, name="top4", depth=4, turns=list(collection.turns.all()))

    response = client.get(reverse("console-pool", args=[collection.name, "top4"]), {"page": 2})

    html = response.content.decode()
    assert "8 pairs over 2 turns" in html
    assert "<td>1_2</td>" in html and "<td>1_1</td>" not in html
    assert 'id="pool-turn-pages"' in html


def test_an_adaptive_pool_needs_a_filter_judge(client, organiser, collection, ranked):
    response = client.post(
        reverse("console-pools", args=[collection.name]),
        {"name": "a", "depth": 4, "adaptive": "on", "min_grade": 2},
    )
    assert response.status_code == 400
    assert b"needs a filter judge" in response.content
    assert not Pool.objects.exists()


def test_it_assigns_relevance_and_support_work(client, organiser, collection, ranked):
    client.post(reverse("console-pools", args=[collection.name]), {"name": "plain", "depth": 2})
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")

    relevance = client.post(
        reverse("console-work", args=[collection.name]),
        {
            "form": "relevance",
            "pool": Pool.objects.get().pk,
            "name": "round1",
            "assessors": [alice.pk, bob.pk],
            "unit_kind": "turn",
            "redundancy": 2,
            "lease_minutes": 30,
            "with_ptkb": "on",
        },
    )
    support = client.post(
        reverse("console-work", args=[collection.name]),
        {"form": "support", "assessors": [alice.pk], "condition": "scratch"},
    )

    assert (relevance.status_code, support.status_code) == (302, 302)
    assignment = Assignment.objects.get(name="round1")
    assert (assignment.units.count(), WorkSlot.objects.filter(assignment=assignment).count()) == (2, 4)
    assert list(
        TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).values_list("user__username", "condition")
    ) == [("alice", "scratch")]


def test_post_editing_support_work_needs_a_machine_judge(client, organiser, collection, ranked):
    alice = UserFactory(username="alice")
    response = client.post(
        reverse("console-work", args=[collection.name]),
        {"form": "support", "assessors": [alice.pk], "condition": "post-edit"},
    )
    assert response.status_code == 400
    assert not TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT).exists()


# --- Dashboard -------------------------------------------------------------------------------------


def test_the_dashboard_counts_units_done_held_and_left_per_assessor(client, organiser):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    assignment = relevance_campaign(assessors=[alice, bob], n_turns=3, lease_minutes=10)
    done = work_lease(assignment=assignment, user=alice)
    done.completed_at = timezone.now()
    done.save()
    work_lease(assignment=assignment, user=alice)
    collection = assignment.pool.collection

    response = client.get(reverse("console-dashboard", args=[collection.name]))

    assert response.status_code == 200
    lines = {a.username: (a.done, a.held, a.left) for a in response.context["dashboard"].assessors}
    assert lines == {"alice": (1, 1, 1), "bob": (0, 0, 1)}
    assert [lease.username for lease in response.context["dashboard"].expiring] == ["alice"]
    assert reverse("judging:agreement-live", args=[collection.name]).encode() in response.content


def test_the_dashboard_says_each_assessors_pace(client, organiser, collection, reports_in_request):
    judge = AssessorJudgeFactory(user=UserFactory(username="ann"))
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    start = timezone.now() - timedelta(minutes=50)
    for i, seconds in enumerate([4, 6, 20]):
        row = RelevanceJudgmentFactory(judge=judge, turn=turn, time_spent_ms=seconds * 1000)
        type(row).objects.filter(pk=row.pk).update(created_at=start + timedelta(minutes=10 * i))

    response = client.get(reverse("console-dashboard", args=[collection.name]))

    [line] = response.context["dashboard"].assessors
    assert (line.judgments, line.median_seconds, line.per_hour) == (3, 6.0, 9.0)


def test_the_dashboard_counts_left_only_units_an_assessor_has_not_had_a_copy_of(client, organiser):
    alice, bob, carol = (UserFactory(username=name) for name in ("alice", "bob", "carol"))
    assignment = relevance_campaign(assessors=[alice, bob, carol], n_turns=3, redundancy=2)
    first = work_lease(assignment=assignment, user=alice)
    WorkSlot.objects.filter(pk=first.pk).update(completed_at=timezone.now())
    held = work_lease(assignment=assignment, user=alice)
    lapsed = work_lease(assignment=assignment, user=bob)
    WorkSlot.objects.filter(pk=lapsed.pk).update(leased_until=timezone.now() - timedelta(minutes=1))
    assert first.unit_id == lapsed.unit_id != held.unit_id

    response = client.get(reverse("console-dashboard", args=[assignment.pool.collection.name]))

    # Every unit stays takeable (a free copy, or bob's lapsed lease); alice had copies of two, bob of one.
    lines = {a.username: (a.done, a.held, a.left) for a in response.context["dashboard"].assessors}
    assert lines == {"alice": (1, 1, 1), "bob": (0, 0, 2), "carol": (0, 0, 3)}
    assert response.context["dashboard"].expiring == []


def test_the_dashboard_splits_sittings_at_pauses_and_counts_ptkb_judgments_in_the_pace(
    client, organiser, collection, reports_in_request
):
    judge = AssessorJudgeFactory(user=UserFactory(username="ann"))
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    now = timezone.now()
    start = now - timedelta(minutes=80)
    # Minutes after the start; the pause from 10 to 50 is over 30 minutes: two sittings of 10 and 5.
    for minutes, seconds in [(0, 4), (10, 6), (50, 20)]:
        row = RelevanceJudgmentFactory(judge=judge, turn=turn, time_spent_ms=seconds * 1000)
        type(row).objects.filter(pk=row.pk).update(created_at=start + timedelta(minutes=minutes))
    statement = PtkbStatementFactory(topic=turn.topic)
    ptkb = PtkbJudgment.objects.create(judge=judge, turn=turn, statement=statement, relevant=True)
    PtkbJudgment.objects.filter(pk=ptkb.pk).update(created_at=start + timedelta(minutes=55))

    response = client.get(reverse("console-dashboard", args=[collection.name]))

    [line] = response.context["dashboard"].assessors
    # 4 judgments in 15 working minutes; the PTKB judgment was not timed; 2 of them in the last hour.
    assert (line.judgments, line.last_hour, line.per_hour, line.median_seconds) == (4, 2, 16.0, 6.0)


def test_the_dashboards_pace_is_computed_on_the_worker_and_again_after_a_grade(client, organiser, collection):
    judge = AssessorJudgeFactory(user=UserFactory(username="ann"))
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="a", time_spent_ms=4000)
    url = reverse("console-dashboard", args=[collection.name])

    computing = client.get(url)
    tasks_run_ready()
    done = client.get(url)
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="b", time_spent_ms=8000)
    earlier = client.get(url)
    tasks_run_ready()
    again = client.get(url)

    assert 'id="report-status"' in computing.content.decode()
    assert computing.context["dashboard"].assessors == []
    assert [line.judgments for line in done.context["dashboard"].assessors] == [1]
    # Until the worker has computed it again, the pace of before the grade, labelled as such.
    assert 'id="report-earlier"' in earlier.content.decode()
    assert [line.judgments for line in earlier.context["dashboard"].assessors] == [1]
    assert [(line.judgments, line.median_seconds) for line in again.context["dashboard"].assessors] == [
        (2, 6.0)
    ]


def _dashboard_world(*, assessors: int, turns: int, judgments: int):
    users = [UserFactory() for _ in range(assessors)]
    assignment = relevance_campaign(assessors=users, n_turns=turns, redundancy=2)
    collection = assignment.pool.collection
    turn = collection.turns.first()
    for user in users:
        slot = work_lease(assignment=assignment, user=user)
        WorkSlot.objects.filter(pk=slot.pk).update(completed_at=timezone.now())
        work_lease(assignment=assignment, user=user)
        judge = AssessorJudgeFactory(user=user)
        for k in range(judgments):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=f"p{k}", time_spent_ms=1000 + k)
    ImportJob.objects.create(collection=collection, kind="topics", file_name="t.json", stored_path="/x")
    return collection


@pytest.mark.parametrize(("assessors", "turns", "judgments"), [(2, 2, 1), (5, 6, 12)])
def test_the_dashboard_costs_the_same_queries_whatever_the_assessors_units_and_judgments(
    client, organiser, django_assert_num_queries, assessors, turns, judgments
):
    collection = _dashboard_world(assessors=assessors, turns=turns, judgments=judgments)
    url = reverse("console-dashboard", args=[collection.name])
    client.get(url)
    tasks_run_ready()

    # Session and user, the collection, the tables' revisions and the stored pace, the assignments, their
    # members, the copies per assessor, the units left, the expiring leases, the uploads, the support work,
    # the judge jobs.
    with django_assert_num_queries(13):
        response = client.get(url)

    assert response.status_code == 200
    assert len(response.context["dashboard"].assessors) == assessors


# --- Downloads -------------------------------------------------------------------------------------


def test_it_downloads_a_judges_qrels_as_the_command_writes_them(client, organiser, collection):
    judge = JudgeFactory(name="nist")
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id="d:1", grade=3)

    response = client.get(reverse("console-export", args=[collection.name, "qrels"]), {"judge": "nist"})

    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{collection.name}-nist.qrels"'
    assert response.streaming
    body = response.getvalue().decode()
    assert body == "".join(qrels_lines(collection=collection, judge=judge))
    assert body == f"{turn.turn_id} 0 d:1 3\n"


def test_a_download_needs_a_judge(client, organiser, collection):
    response = client.get(reverse("console-export", args=[collection.name, "qrels"]))
    assert response.status_code == 400
    assert b"choose the judge" in response.content


def test_the_judgment_log_downloads_as_csv(client, organiser, collection):
    response = client.get(reverse("console-export", args=[collection.name, "judgment-log"]))
    assert response.status_code == 200
    assert response.getvalue().decode().startswith("judge,username,")


# --- People ----------------------------------------------------------------------------------------


def test_it_creates_an_assessor_with_a_password(client, organiser):
    response = client.post(
        reverse("console-people"), {"username": "ann", "role": "assessor", "password": "long-password-1"}
    )
    assert response.status_code == 302
    client.logout()
    assert (
        client.post(reverse("login"), {"username": "ann", "password": "long-password-1"}).status_code == 302
    )


def test_an_invited_organiser_sets_a_password_through_the_one_time_link(client, organiser):
    response = client.post(reverse("console-people"), {"username": "oscar", "role": "organiser"}, follow=True)
    [message] = [str(m) for m in response.context["messages"]]
    link = message.split("link: ")[1]
    client.logout()

    page = client.get(link, follow=True)
    assert page.status_code == 200
    done = client.post(
        page.redirect_chain[-1][0], {"new_password1": "a-new-secret-77", "new_password2": "a-new-secret-77"}
    )

    assert done.status_code == 302
    assert (
        client.post(reverse("login"), {"username": "oscar", "password": "a-new-secret-77"}).status_code == 302
    )
    assert client.get(link, follow=True).content.count(b'id="welcome-invalid"') == 1


def test_an_assessor_sees_and_resets_their_api_token(client):
    user = UserFactory()
    client.force_login(user)

    page = client.get(reverse("account"))
    old = Token.objects.get(user=user).key
    assert page.status_code == 200
    assert old.encode() in page.content
    reset = client.post(reverse("account-token-reset"))

    assert reset.status_code == 302
    assert Token.objects.get(user=user).key != old


def test_the_account_page_needs_a_login(client):
    assert client.get(reverse("account")).status_code == 302
    assert client.post(reverse("account-token-reset")).status_code == 302
    assert not Token.objects.exists()


def test_the_crowd_app_adds_the_cone_rag_files_to_the_upload_page(client, organiser, collection):
    turn = TurnFactory(topic=TopicFactory(collection=collection, number="7"), position=1, turn_id="7_1")
    content = json.dumps({turn.turn_id: {"run-a": "An answer.", "run-b": "Another."}}).encode()

    first = upload(client, collection, "responses.json", content, "cone-rag-responses")
    again = upload(client, collection, "responses.json", content, "cone-rag-responses")

    assert (first.status_code, again.status_code) == (200, 200)
    assert b'id="import-done"' in first.content
    assert b'id="import-unchanged"' in again.content
    assert sorted(collection.runs.values_list("name", flat=True)) == ["run-a", "run-b"]
    assert turn.responses.count() == 2
