"""Stored reports: PostgreSQL's table revisions, the fingerprint that reads them, a report computed once
on the worker and found again, recomputed after a label is written, its progress, its failure and its
second try, and the pruning of old rows."""

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotation.models import Collection, RelevanceJudgment, Turn
from core.revisions import RevisionMissing, revisions_install, revisions_read
from crowd.models import CrowdCampaign
from judging.models import BudgetSimulation, ReportResult
from judging.reports.store import ReportError, report_again, report_for, report_parts, reports_prune
from judging.reports.tasks import report_run
from tests.background import task_left_by_a_dead_worker, tasks_run_ready
from tests.factories import CollectionFactory, OrganiserFactory, RelevanceJudgmentFactory, TurnFactory

pytestmark = pytest.mark.django_db

GRADED = "tests.judging.reports.compute.graded"


def _ask(collection, *, grade=2, compute=GRADED, version=1):
    return report_for(
        kind="test-graded",
        version=version,
        collection=collection,
        params={"grade": grade},
        reads=[RelevanceJudgment, Turn],
        compute=compute,
    )


def _html(view):
    request = RequestFactory().get("/somewhere/?a=1")
    return render_to_string("reports/_status.html", {"report": view, "request": request})


@pytest.fixture
def graded_collection():
    turn = TurnFactory()
    for grade in (0, 1, 2, 3, 4):
        RelevanceJudgmentFactory(turn=turn, grade=grade)
    return turn.topic.collection


def test_every_app_table_a_report_may_read_has_a_revision_and_bookkeeping_none():
    revisions = revisions_read(models=[RelevanceJudgment, Turn, Collection, CrowdCampaign, BudgetSimulation])

    assert len(revisions) == 5
    with pytest.raises(RevisionMissing, match=ReportResult._meta.db_table):
        revisions_read(models=[ReportResult])


def test_any_writer_moves_the_revision_of_the_table_it_writes_and_of_no_other(graded_collection):
    table, turns = RelevanceJudgment._meta.db_table, Turn._meta.db_table
    before = revisions_read(models=[RelevanceJudgment, Turn])

    RelevanceJudgment.objects.filter(grade=0).update(grade=1)
    by_orm = revisions_read(models=[RelevanceJudgment, Turn])
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE grade = 4")
    by_sql = revisions_read(models=[RelevanceJudgment, Turn])
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET grade = grade WHERE false")  # a statement touching no row
    by_nothing = revisions_read(models=[RelevanceJudgment, Turn])

    assert before[table] < by_orm[table] < by_sql[table] < by_nothing[table]
    assert before[turns] == by_orm[turns] == by_sql[turns] == by_nothing[turns]


def test_installing_again_changes_nothing():
    before = revisions_read(models=[RelevanceJudgment])

    assert revisions_install(models=[RelevanceJudgment, Turn]) == []
    assert revisions_read(models=[RelevanceJudgment]) == before


def test_the_first_view_queues_it_the_worker_computes_it_and_the_next_view_reads_it(graded_collection):
    first = _ask(graded_collection)

    assert (first.row.status, first.done, first.computing, first.result) == ("pending", False, True, None)
    assert first.earlier is None and first.row.task_id
    assert "waiting for a task worker" in _html(first)
    assert tasks_run_ready() == 1
    with CaptureQueriesContext(connection) as queries:
        again = _ask(graded_collection)
    assert again.row.pk == first.row.pk
    assert again.done and again.result == {"grade": 2, "count": 3}
    assert len(queries) == 2  # the revisions, the row
    assert _html(again).strip() == ""


def test_two_views_queue_it_once(graded_collection):
    one, two = _ask(graded_collection), _ask(graded_collection)

    assert one.row.pk == two.row.pk
    assert DBTaskResult.objects.count() == 1


def test_other_choices_and_another_version_are_other_reports(graded_collection):
    rows = {_ask(graded_collection).row.pk, _ask(graded_collection, grade=3).row.pk}
    rows.add(_ask(graded_collection, version=2).row.pk)

    assert len(rows) == 3


def test_a_label_written_after_the_report_makes_the_next_view_compute_again_and_never_show_it_current(
    graded_collection,
):
    _ask(graded_collection)
    tasks_run_ready()
    RelevanceJudgmentFactory(turn=Turn.objects.get(), grade=4)

    after = _ask(graded_collection)

    assert not after.done and after.result is None and after.computing
    assert after.earlier.result == {"grade": 2, "count": 3}
    html = _html(after)
    assert "Figures of" in html and "before the latest changes; the current ones are being computed" in html
    tasks_run_ready()
    assert _ask(graded_collection).result == {"grade": 2, "count": 4}


def test_the_figures_of_an_older_version_are_never_shown_as_the_earlier_figures_of_a_newer_one(
    graded_collection,
):
    _ask(graded_collection, version=1)
    tasks_run_ready()

    newer = _ask(graded_collection, version=2)

    assert not newer.done and newer.earlier is None


def test_its_parts_are_read_in_sql_a_slice_at_a_time_with_the_figures_left_in_the_database():
    collection = CollectionFactory()
    report = ReportResult.objects.create(
        kind="test-parts",
        key="k",
        params_key="p",
        collection=collection,
        compute=GRADED,
        status=ReportResult.Status.DONE,
        result={
            "collection": "c",
            "sections": [{"title": "one", "rows": list(range(30))}, {"title": "two", "rows": []}],
        },
    )
    deferred = ReportResult.objects.defer("result").get(pk=report.pk)

    with CaptureQueriesContext(connection) as queries:
        parts = report_parts(
            report=deferred,
            parts={
                "collection": "$.collection",
                "titles": "$.sections[*].title",
                "totals": "$.sections[*].rows.size()",
                "page": ("$.sections[0].rows", range(25, 50)),
                "nothing": ("$.sections[1].rows", range(0)),
                "past": ("$.sections[0].rows", range(40, 50)),
            },
        )

    # One query, which reads the stored figures once (not once a path: each read decompresses them
    # whole) and applies the five paths to them (the empty range asks none).
    (sql,) = (query["sql"] for query in queries)
    assert sql.count(" result ") == 1 and sql.count("jsonb_path_query_array(") == 5
    assert parts == {
        "collection": ["c"],
        "titles": ["one", "two"],
        "totals": [30, 0],
        "page": [25, 26, 27, 28, 29],
        "nothing": [],
        "past": [],
    }
    with pytest.raises(ValueError, match="consecutive"):
        report_parts(report=deferred, parts={"odd": ("$.sections[0].rows", range(0, 10, 2))})


def test_a_page_that_reads_parts_asks_for_the_row_without_its_figures(graded_collection):
    _ask(graded_collection)
    tasks_run_ready()

    with CaptureQueriesContext(connection) as queries:
        view = report_for(
            kind="test-graded",
            version=1,
            collection=graded_collection,
            params={"grade": 2},
            reads=[RelevanceJudgment, Turn],
            compute=GRADED,
            deferred=True,
        )

    assert view.done
    assert not any('"judging_reportresult"."result"' in query["sql"] for query in queries)
    assert report_parts(report=view.row, parts={"count": "$.count"}) == {"count": [3]}


def test_a_label_in_another_collection_also_computes_it_again(graded_collection):
    _ask(graded_collection)
    tasks_run_ready()
    RelevanceJudgmentFactory(turn=TurnFactory(topic__collection=CollectionFactory()), grade=4)

    assert not _ask(graded_collection).done


def test_the_queries_of_a_view_do_not_grow_with_the_labels(graded_collection):
    small = CollectionFactory()
    RelevanceJudgmentFactory(turn=TurnFactory(topic__collection=small), grade=3)
    counts = []
    for collection in (small, graded_collection):
        _ask(collection)
        tasks_run_ready()
        with CaptureQueriesContext(connection) as queries:
            _ask(collection)
        counts.append(len(queries))

    assert counts[0] == counts[1]


def test_progress_is_written_on_the_row_and_shown(graded_collection):
    view = _ask(graded_collection)
    tasks_run_ready()
    view.row.refresh_from_db()
    assert (view.row.progress_done, view.row.progress_total, view.row.progress_word) == (5, 5, "labels")

    ReportResult.objects.filter(pk=view.row.pk).update(status="running", progress_done=2, progress_total=8)
    running = _ask(graded_collection)
    task_left_by_a_dead_worker(running.row.task_id)
    # A row marked running whose worker lives shows its progress; this one's worker is dead, so read
    # the page as a live worker's first.
    running = type(running)(row=ReportResult.objects.get(pk=view.row.pk), earlier=None, interrupted=False)
    html = _html(running)
    assert "Computing" in html and "2 of 8 labels" in html and 'value="25"' in html


def test_a_failed_report_says_why_and_offers_to_compute_again(client, graded_collection):
    client.force_login(OrganiserFactory())
    _ask(graded_collection, compute="tests.judging.reports.compute.refused")
    tasks_run_ready()

    failed = _ask(graded_collection, compute="tests.judging.reports.compute.refused")
    html = _html(failed)
    assert failed.failed and not failed.computing and failed.result is None
    assert "could not be computed" in html and "ValueError: the judge has no labels" in html
    assert reverse("judging:report-again", args=[failed.row.pk]) in html
    assert 'name="next" value="/somewhere/?a=1"' in html

    response = client.post(reverse("judging:report-again", args=[failed.row.pk]), {"next": "/somewhere/?a=1"})
    assert response.status_code == 302 and response["Location"] == "/somewhere/?a=1"
    assert ReportResult.objects.get(pk=failed.row.pk).status == "pending"
    with pytest.raises(ReportError):
        report_again(report=failed.row)


def test_figures_json_cannot_hold_fail_rather_than_change(graded_collection):
    view = _ask(graded_collection, compute="tests.judging.reports.compute.nan")

    report = report_run(report_id=view.row.pk)

    assert report.status == "failed" and "Out of range float values" in report.error


def test_an_interrupted_report_is_shown_so_and_can_be_queued_again(graded_collection):
    view = _ask(graded_collection)
    task_left_by_a_dead_worker(view.row.task_id)
    ReportResult.objects.filter(pk=view.row.pk).update(status="running")

    lost = _ask(graded_collection)

    assert lost.interrupted and not lost.computing
    assert "Interrupted" in _html(lost) and "<meta" not in render_to_string(
        "reports/_refresh.html", {"report": lost}
    )
    assert report_again(report=lost.row).status == "pending"
    assert tasks_run_ready() == 1
    assert _ask(graded_collection).result == {"grade": 2, "count": 3}


def test_the_refresh_is_on_while_it_computes(graded_collection):
    computing = _ask(graded_collection)

    assert '<meta http-equiv="refresh"' in render_to_string("reports/_refresh.html", {"report": computing})


def test_pruning_keeps_the_latest_finished_rows_of_each_choice_and_every_unfinished_one(graded_collection):
    turn = Turn.objects.get()
    for _ in range(5):
        _ask(graded_collection)
        tasks_run_ready()
        RelevanceJudgmentFactory(turn=turn, grade=4)
    other = _ask(graded_collection, grade=1)
    tasks_run_ready()
    waiting = _ask(graded_collection)

    assert reports_prune(keep=3) == 2

    kept = ReportResult.objects.filter(params__grade=2, status="done").order_by("created_at")
    assert [row.result["count"] for row in kept] == [5, 6, 7]
    assert ReportResult.objects.filter(pk__in=[other.row.pk, waiting.row.pk]).count() == 2
