"""The TREC RAG nugget score pages: organisers only; the run table and a run's topics equal
`nugget_scores` and nuggetizer's own calculate_metrics on the downloaded assignments; bad choices answer
400 with the form's errors; downloads carry the choices in their names and read back; collection text is
escaped; the query count does not grow with the data."""

from __future__ import annotations

import json

import pytest
from django.db import connection as db
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from nuggetizer.core.metrics import calculate_global_metrics, calculate_nugget_scores

from annotation.models import Judge, NuggetImportanceJudgment, Response
from annotation.rag_nuggets.io import assignments_import
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.scores.rag_nuggets import nugget_scores
from tests.background import IMMEDIATE
from tests.factories import CollectionFactory, RunFactory
from tests.judging.nugget_pages import assert_form_only, assert_organisers_only
from tests.rag_nugget_files import assignment_records, assignments_file, nugget_lists, rag_collection

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def reports_inline(settings):
    """The pages' scores are computed as they are asked (the immediate backend), inside the test's
    transaction; tests/judging/test_report_pages.py pins the queue, the worker and the stored figures."""
    settings.TASKS = IMMEDIATE


RUNS = ("run-a", "run-b", "run-c", "<b>run-d&amp;")


def _loaded(tmp_path, *, runs=RUNS, size=5, name="assigner"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    collection = CollectionFactory()
    rag_collection(tmp_path, collection, runs=runs)
    records = assignment_records(nugget_lists(seed=3, size=size), seed=1, runs=runs)
    judge = Judge.objects.create(name=name, kind=Judge.Kind.LLM)
    assignments_import(
        path=assignments_file(tmp_path / "a.jsonl", records), collection=collection, judge=judge
    )
    return collection, judge, records


@pytest.fixture
def loaded(tmp_path):
    return _loaded(tmp_path)


def scores_url(collection):
    return reverse("judging:nugget-scores", args=[collection.name])


def run_url(collection, run):
    return reverse("judging:nugget-scores-run", args=[collection.name, run])


def download_url(collection, kind):
    return reverse("judging:nugget-scores-download", args=[collection.name, kind])


def _jsonl(response) -> list[dict]:
    # The assignments stream; getvalue() reads either kind of response whole.
    return [json.loads(line) for line in response.getvalue().decode().splitlines()]


@pytest.mark.parametrize("page", ["scores", "run", "nuggets", "assignments", "metrics"])
def test_it_sends_anonymous_users_to_login_and_refuses_assessors(client, loaded, page):
    collection, judge, _ = loaded
    url = {
        "scores": scores_url(collection),
        "run": run_url(collection, "run-a"),
        "nuggets": download_url(collection, "nuggets"),
        "assignments": download_url(collection, "assignments"),
        "metrics": download_url(collection, "metrics"),
    }[page]

    assert_organisers_only(client, url, {"judge": judge.name, "run": "run-a"})


def test_it_shows_the_form_only_until_a_judge_is_chosen(organiser, loaded):
    collection, judge, _ = loaded

    response = organiser.get(scores_url(collection))

    assert_form_only(response, result="table", judge_name=judge.name)


def test_it_ranks_every_run_by_the_chosen_score_with_the_scores_of_nugget_scores(organiser, loaded):
    collection, judge, _ = loaded

    response = organiser.get(scores_url(collection), {"judge": judge.name, "order": "all_score"})

    assert response.status_code == 200
    expected = nugget_scores(collection=collection, judge=judge)
    rows = response.context["table"].rows
    assert {row.run: row.scores for row in rows} == expected["runs"]
    assert [row.scores["all_score"] for row in rows] == sorted(
        (values["all_score"] for values in expected["runs"].values()), reverse=True
    )
    assert [row.rank for row in rows][0] == 1
    assert all(row.topics == 3 for row in rows)
    page = response.content.decode()
    assert "&lt;b&gt;run-d&amp;amp;" in page and "<b>run-d" not in page


def test_it_ranks_by_each_of_the_four_scores(organiser, loaded):
    collection, judge, _ = loaded
    expected = nugget_scores(collection=collection, judge=judge)["runs"]

    for name in SCORE_NAMES:
        rows = (
            organiser.get(scores_url(collection), {"judge": judge.name, "order": name}).context["table"].rows
        )
        values = [row.scores[name] for row in rows]
        assert values == sorted((v[name] for v in expected.values()), reverse=True), name
        assert rows[0].rank == 1


def test_it_counts_the_chosen_importance_judge(organiser, loaded):
    collection, judge, _ = loaded
    everything_vital = Judge.objects.create(name="all-vital", kind=Judge.Kind.IMPORTED)
    for label in NuggetImportanceJudgment.objects.filter(judge=judge):
        NuggetImportanceJudgment.objects.create(
            judge=everything_vital, nugget=label.nugget, importance="vital"
        )

    response = organiser.get(scores_url(collection), {"judge": judge.name, "importance_judge": "all-vital"})

    expected = nugget_scores(collection=collection, judge=judge, importance_judge=everything_vital)["runs"]
    rows = response.context["table"].rows
    assert {row.run: row.scores for row in rows} == expected
    # Every nugget vital: the vital scores are the "all" ones.
    assert all(row.scores["vital_score"] == row.scores["all_score"] for row in rows)


def test_it_shows_one_run_topic_by_topic_with_its_mean(organiser, loaded):
    collection, judge, records = loaded

    response = organiser.get(run_url(collection, "run-b"), {"judge": judge.name})

    assert response.status_code == 200
    topics = response.context["topics"]
    expected = {
        r["qid"]: vars(calculate_nugget_scores(r["qid"], r["nuggets"]))
        for r in records
        if r["run_id"] == "run-b"
    }
    assert [t.qid for t in topics] == ["2024-1", "2024-2", "2024-10"]
    for topic in topics:
        assert topic.values == [expected[topic.qid][name] for name in SCORE_NAMES]
    reference = calculate_global_metrics([r for r in records if r["run_id"] == "run-b"])
    assert response.context["row"].values == [reference[name] for name in SCORE_NAMES]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"judge": "nobody"}, "judge"),
        ({"judge": "assigner", "importance_judge": "nobody"}, "importance_judge"),
        ({"judge": "assigner", "order": "ndcg"}, "order"),
        ({"judge": "assigner\x00"}, "judge"),
    ],
)
def test_it_answers_400_with_the_forms_error_for_a_bad_choice(organiser, loaded, query, field):
    collection, _, _ = loaded

    page = organiser.get(scores_url(collection), query)
    download = organiser.get(download_url(collection, "assignments"), query)

    assert page.status_code == 400
    assert field in page.context["form"].errors
    assert download.status_code == 400
    assert field in download.json()["fields"]


def test_it_refuses_a_judge_of_another_collection(organiser, loaded, tmp_path):
    collection, _, _ = loaded
    _loaded(tmp_path / "other", name="elsewhere")

    response = organiser.get(scores_url(collection), {"judge": "elsewhere"})

    assert response.status_code == 400
    assert "judge" in response.context["form"].errors


def test_it_answers_404_for_an_unknown_collection_run_or_download(organiser, loaded):
    collection, judge, _ = loaded

    assert organiser.get(scores_url(type(collection)(name="missing"))).status_code == 404
    assert organiser.get(run_url(collection, "no-such-run"), {"judge": judge.name}).status_code == 404
    assert organiser.get(download_url(collection, "qrels"), {"judge": judge.name}).status_code == 404


def test_its_downloads_read_back_as_nuggetizers_files_named_by_the_choices(organiser, loaded):
    collection, judge, _ = loaded
    query = {"judge": judge.name, "order": "all_score"}
    table = organiser.get(scores_url(collection), query).context["table"]

    assignments = organiser.get(download_url(collection, "assignments"), query)
    nuggets = organiser.get(download_url(collection, "nuggets"), query)
    metrics = organiser.get(download_url(collection, "metrics"), {**query, "run": "run-c"})

    assert (assignments.status_code, nuggets.status_code, metrics.status_code) == (200, 200, 200)
    assert assignments["Content-Disposition"] == (
        f'attachment; filename="{collection.name}-assignments-assigner-imp-default.jsonl"'
    )
    assert (
        nuggets["Content-Disposition"]
        == f'attachment; filename="{collection.name}-nuggets-assigner-imp-default.jsonl"'
    )
    assert metrics["Content-Disposition"] == (
        f'attachment; filename="{collection.name}-metrics-run-c-assigner-imp-default.jsonl"'
    )
    # nuggetizer's own scores of the exported assignments are the page's, per run and per answer.
    records = _jsonl(assignments)
    for row in table.rows:
        reference = calculate_global_metrics([r for r in records if r["run_id"] == row.run])
        assert row.values == [reference[name] for name in SCORE_NAMES], row.run
    run_c = [r for r in records if r["run_id"] == "run-c"]
    lines = _jsonl(metrics)
    assert lines[:-1] == [
        {
            "qid": r["qid"],
            **{n: getattr(calculate_nugget_scores(r["qid"], r["nuggets"]), n) for n in SCORE_NAMES},
        }
        for r in run_c
    ]
    assert lines[-1] == calculate_global_metrics(run_c)
    created = _jsonl(nuggets)
    assert [r["qid"] for r in created] == ["2024-1", "2024-2", "2024-10"]
    assert all({"text", "importance"} <= set(n) for r in created for n in r["nuggets"])


def test_its_metrics_download_needs_a_scored_run(organiser, loaded):
    collection, judge, _ = loaded

    missing = organiser.get(download_url(collection, "metrics"), {"judge": judge.name})
    unknown = organiser.get(download_url(collection, "metrics"), {"judge": judge.name, "run": "nope"})

    assert missing.status_code == unknown.status_code == 400
    assert "run" in missing.json()["fields"]


def test_it_names_the_importance_judge_and_answered_only_in_the_file_names(organiser, loaded):
    collection, judge, _ = loaded
    other = Judge.objects.create(name="people: vital", kind=Judge.Kind.IMPORTED)
    label = NuggetImportanceJudgment.objects.filter(judge=judge).first()
    NuggetImportanceJudgment.objects.create(judge=other, nugget=label.nugget, importance="vital")

    response = organiser.get(
        download_url(collection, "assignments"),
        {"judge": judge.name, "importance_judge": other.name, "answered_only": "on"},
    )

    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        f'attachment; filename="{collection.name}-assignments-assigner-imp-people_vital-answered-only.jsonl"'
    )


def _page_queries(client, collection, judge) -> tuple[int, int, int]:
    counts = []
    for url in (scores_url(collection), run_url(collection, "run-a")):
        # The first view computes the scores; the one counted shows them stored.
        client.get(url, {"judge": judge.name, "order": "vital_score"})
        with CaptureQueriesContext(db) as queries:
            response = client.get(url, {"judge": judge.name, "order": "vital_score"})
        assert response.status_code == 200
        counts.append(len(queries))
    with CaptureQueriesContext(db) as queries:
        assert (
            client.get(download_url(collection, "metrics"), {"judge": judge.name, "run": "run-a"}).status_code
            == 200
        )
    counts.append(len(queries))
    return tuple(counts)  # type: ignore[return-value]


def test_its_query_count_does_not_grow_with_the_runs_and_nuggets(organiser, tmp_path):
    small = _loaded(tmp_path / "small", runs=("run-a", "run-b"), size=2, name="small")
    large = _loaded(tmp_path / "large", runs=tuple(f"run-{c}" for c in "abcdefgh"), size=7, name="large")

    few = _page_queries(organiser, small[0], small[1])
    many = _page_queries(organiser, large[0], large[1])

    assert few == many
    assert max(many) <= 20


def test_a_topic_a_run_skipped_scores_0_on_the_page_and_in_nuggetizers_scores_of_the_download(
    organiser, tmp_path
):
    collection = CollectionFactory()
    rag_collection(tmp_path, collection, runs=RUNS)
    records = [
        r
        for r in assignment_records(nugget_lists(seed=3, size=5), seed=1, runs=RUNS)
        if (r["run_id"], r["qid"]) != ("run-b", "2024-2")
    ]
    judge = Judge.objects.create(name="assigner", kind=Judge.Kind.LLM)
    assignments_import(
        path=assignments_file(tmp_path / "a.jsonl", records), collection=collection, judge=judge
    )
    Response.objects.filter(run__name="run-b", turn__turn_id="2024-2").delete()  # run-b never answered it

    page = organiser.get(run_url(collection, "run-b"), {"judge": judge.name})
    answered_only = organiser.get(run_url(collection, "run-b"), {"judge": judge.name, "answered_only": "on"})
    exported = _jsonl(organiser.get(download_url(collection, "assignments"), {"judge": judge.name}))

    skipped = next(t for t in page.context["topics"] if t.qid == "2024-2")
    assert (skipped.answered, skipped.values) == (False, [0.0, 0.0, 0.0, 0.0])
    assert 'class="missing"' in page.content.decode() and "not answered" in page.content.decode()
    reference = calculate_global_metrics([r for r in exported if r["run_id"] == "run-b"])
    assert page.context["row"].values == [reference[name] for name in SCORE_NAMES]
    assert page.context["row"].topics == 3 and page.context["row"].answered == 2
    # Averaged over the answered topics only, as a named option the page states.
    assert [t.qid for t in answered_only.context["topics"]] == ["2024-1", "2024-10"]
    assert 'id="answered-only-note"' in answered_only.content.decode()


def test_a_run_without_assignments_under_the_choices_says_so(organiser, loaded):
    collection, judge, _ = loaded
    RunFactory(collection=collection, name="late-run")

    response = organiser.get(run_url(collection, "late-run"), {"judge": judge.name})

    assert response.status_code == 200
    assert response.context["row"] is None
    assert 'id="run-unscored"' in response.content.decode()


def test_the_collection_dashboard_links_the_nugget_pages(organiser, loaded):
    collection, _, _ = loaded

    page = organiser.get(reverse("console-dashboard", args=[collection.name])).content.decode()

    assert f'href="{scores_url(collection)}" id="nugget-scores"' in page
    assert (
        f'href="{reverse("judging:nugget-calibration", args=[collection.name])}" id="nugget-calibration"'
        in page
    )
