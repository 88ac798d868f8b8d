"""Calibration of two nugget evaluations of the same runs, on the page and in `nugget_calibration`: the
run-level tau-b and its interval are `rank_agreement`'s on the two evaluations' nugget scores, the
per-topic figures scipy's on each topic; organisers only, bad choices answer 400, the command's JSON is the
page's, and the query count does not grow with the data."""

from __future__ import annotations

import json
import re
import statistics
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection as db
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy import stats

from annotation.models import Judge, NuggetImportanceJudgment
from annotation.rag_nuggets.io import assignments_import
from judging.measures.agreement import rank_agreement
from judging.scores.rag_nuggets import nugget_scores
from tests.factories import CollectionFactory
from tests.judging.helpers import report_page
from tests.judging.nugget_pages import assert_form_only, assert_organisers_only
from tests.rag_nugget_files import assignment_records, assignments_file, nugget_lists, rag_collection

pytestmark = pytest.mark.django_db

RUNS = tuple(f"run-{c}" for c in "abcdef") + ("<i>run-g",)


def _collection(tmp_path, runs=RUNS, size=5):
    tmp_path.mkdir(parents=True, exist_ok=True)
    collection = CollectionFactory()
    rag_collection(tmp_path, collection, runs=runs)
    lists = nugget_lists(seed=3, size=size)
    judges = []
    for name, seed in (("auto", 1), ("manual", 2)):
        judge = Judge.objects.create(name=name if size == 5 else f"{name}-{size}", kind=Judge.Kind.LLM)
        records = assignment_records(lists, seed=seed, runs=runs)
        assignments_import(
            path=assignments_file(tmp_path / f"{name}.jsonl", records), collection=collection, judge=judge
        )
        judges.append(judge)
    return collection, judges[0], judges[1]


@pytest.fixture
def setup(tmp_path):
    return _collection(tmp_path)


def url(collection):
    return reverse("judging:nugget-calibration", args=[collection.name])


def _expected(collection, a, b, score, importance_a=None, importance_b=None):
    found_a = nugget_scores(collection=collection, judge=a, importance_judge=importance_a)
    found_b = nugget_scores(collection=collection, judge=b, importance_judge=importance_b)

    def per_topic(found):
        table = {}
        for answer in found["answers"]:
            table.setdefault(answer["run_id"], {})[answer["qid"]] = answer[score]
        return table

    return (
        found_a,
        found_b,
        rank_agreement(
            scores_a={r: v[score] for r, v in found_a["runs"].items()},
            scores_b={r: v[score] for r, v in found_b["runs"].items()},
            per_turn_a=per_topic(found_a),
            per_turn_b=per_topic(found_b),
        ),
    )


def test_it_sends_anonymous_users_to_login_and_refuses_assessors(client, setup):
    collection, auto, manual = setup

    assert_organisers_only(client, url(collection), {"judge_a": auto.name, "judge_b": manual.name})


def test_it_shows_the_form_until_two_evaluations_are_chosen(organiser, setup):
    collection, auto, _ = setup

    response = organiser.get(url(collection))

    assert_form_only(response, result="report", judge_name=auto.name)


def test_the_scores_pages_link_fills_in_evaluation_a(organiser, setup):
    collection, auto, _ = setup
    scores = report_page(
        organiser,
        reverse("judging:nugget-scores", args=[collection.name]),
        {"judge": auto.name, "order": "vital_score"},
    ).content.decode()
    link = re.search(r'href="([^"]+)" id="calibrate-this"', scores).group(1).replace("&amp;", "&")

    response = organiser.get(link)

    assert response.status_code == 200
    assert "report" not in response.context
    form = response.context["form"]
    assert (form.initial["judge_a"], form.initial["score"]) == (auto.name, "vital_score")
    assert f'<option value="{auto.name}" selected>' in response.content.decode()


def test_it_gives_rank_agreements_run_level_tau_and_interval_and_scipys_per_topic_figures(organiser, setup):
    collection, auto, manual = setup

    response = organiser.get(
        url(collection), {"judge_a": auto.name, "judge_b": manual.name, "score": "all_score"}
    )

    assert response.status_code == 200
    report = response.context["report"]
    found_a, found_b, expected = _expected(collection, auto, manual, "all_score")
    assert report["run_level"] == expected
    assert (
        report["run_level"]["kendall_tau_b"] is not None and report["run_level"]["kendall_tau_ci"] is not None
    )
    assert report["run_level"]["n_runs"] == len(RUNS)
    for row in report["per_topic"]["topics"]:
        x = [
            next(a["all_score"] for a in found_a["answers"] if a["qid"] == row["topic"] and a["run_id"] == r)
            for r in sorted(RUNS)
        ]
        y = [
            next(a["all_score"] for a in found_b["answers"] if a["qid"] == row["topic"] and a["run_id"] == r)
            for r in sorted(RUNS)
        ]
        assert row["runs"] == len(RUNS)
        if row["kendall_tau_b"] is not None:
            assert row["kendall_tau_b"] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
            assert row["pearson_r"] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert [row["topic"] for row in report["per_topic"]["topics"]] == ["2024-1", "2024-2", "2024-10"]
    page = response.content.decode()
    assert 'id="fig-tau"' in page and 'id="fig-tau-ci"' in page
    assert "&lt;i&gt;run-g" in page and "<i>run-g" not in page


def test_it_compares_the_runs_on_the_topics_both_evaluations_cover(organiser, tmp_path):
    collection, auto, _ = _collection(tmp_path)
    manual = Judge.objects.create(name="manual-subset", kind=Judge.Kind.IMPORTED)
    records = [
        r
        for r in assignment_records(nugget_lists(seed=3, size=5), seed=5, runs=RUNS)
        if r["qid"] != "2024-2"  # people assessed two of the three topics
    ]
    assignments_import(
        path=assignments_file(tmp_path / "subset.jsonl", records), collection=collection, judge=manual
    )

    report = organiser.get(
        url(collection), {"judge_a": auto.name, "judge_b": manual.name, "score": "all_score"}
    ).context["report"]

    found_a = nugget_scores(collection=collection, judge=auto)
    shared = {"2024-1", "2024-10"}
    expected_a = {
        run: statistics.mean(
            a["all_score"] for a in found_a["answers"] if a["run_id"] == run and a["qid"] in shared
        )
        for run in RUNS
    }
    assert {row["run"]: row["score_a"] for row in report["run_level"]["runs"]} == expected_a
    assert report["topics"] == {"shared": 2, "only_a": ["2024-2"], "only_b": []}
    assert any("compared on the 2 topics both evaluations cover" in note for note in report["notes"])
    assert report["per_topic"]["only_a"] == ["2024-2"]


def test_it_compares_two_importance_judges_of_the_same_assignments(organiser, setup):
    collection, auto, _ = setup
    people = Judge.objects.create(name="people", kind=Judge.Kind.IMPORTED)
    for label in NuggetImportanceJudgment.objects.filter(judge=auto).order_by("pk"):
        NuggetImportanceJudgment.objects.create(
            judge=people, nugget=label.nugget, importance="okay" if label.importance == "vital" else "vital"
        )

    response = organiser.get(
        url(collection),
        {"judge_a": auto.name, "judge_b": auto.name, "importance_b": people.name, "score": "vital_score"},
    )

    assert response.status_code == 200
    report = response.context["report"]
    assert (report["a"], report["b"]) == (
        {"judge": "auto", "importance_judge": None},
        {"judge": "auto", "importance_judge": "people"},
    )
    assert report["run_level"] == _expected(collection, auto, auto, "vital_score", importance_b=people)[2]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"judge_a": "auto", "judge_b": "nobody"}, "judge_b"),
        ({"judge_a": "", "judge_b": "manual"}, "judge_a"),
        ({"judge_a": "auto", "judge_b": "manual", "importance_a": "nobody"}, "importance_a"),
        ({"judge_a": "auto", "judge_b": "manual", "score": "ndcg@5"}, "score"),
        ({"judge_a": "auto", "judge_b": "auto"}, "__all__"),
        ({"judge_a": "auto\x00", "judge_b": "manual"}, "judge_a"),
    ],
)
def test_it_answers_400_with_the_forms_error_for_bad_choices(organiser, setup, query, field):
    collection, _, _ = setup

    page = organiser.get(url(collection), query)
    as_json = organiser.get(url(collection), {**query, "format": "json"})

    assert page.status_code == 400
    assert field in page.context["form"].errors
    assert as_json.status_code == 400
    assert as_json.json()["code"] == "invalid"


def test_the_command_prints_the_pages_report(organiser, setup):
    collection, auto, manual = setup
    page = organiser.get(
        url(collection),
        {"judge_a": auto.name, "judge_b": manual.name, "score": "strict_all_score", "format": "json"},
    ).json()
    as_json, as_text = StringIO(), StringIO()

    call_command(
        "nugget_calibration",
        collection=collection.name,
        judge_a=auto.name,
        judge_b=manual.name,
        score="strict_all_score",
        format="json",
        stdout=as_json,
    )
    call_command(
        "nugget_calibration",
        collection=collection.name,
        judge_a=auto.name,
        judge_b=manual.name,
        stdout=as_text,
    )

    assert json.loads(as_json.getvalue()) == page
    text = as_text.getvalue()
    assert text.startswith(
        "strict_vital_score: A (auto, vital/okay default) vs B (manual, vital/okay default)"
    )
    assert "run level: Kendall's tau-b" in text and "per topic: tau-b" in text
    assert "2024-10" in text and "run-a" in text


def test_the_command_refuses_the_same_evaluation_twice_and_unknown_judges(setup):
    collection, auto, _ = setup

    with pytest.raises(CommandError, match="the same choices"):
        call_command("nugget_calibration", collection=collection.name, judge_a=auto.name, judge_b=auto.name)
    with pytest.raises(CommandError, match="nobody"):
        call_command("nugget_calibration", collection=collection.name, judge_a=auto.name, judge_b="nobody")


def test_the_command_refuses_evaluations_without_a_common_run(setup):
    collection, auto, _ = setup
    idle = Judge.objects.create(name="idle", kind=Judge.Kind.LLM)

    with pytest.raises(CommandError, match="no run of collection"):
        call_command("nugget_calibration", collection=collection.name, judge_a=auto.name, judge_b=idle.name)


def test_its_query_count_does_not_grow_with_the_runs_and_nuggets(organiser, tmp_path):
    counts = []
    for runs, size in ((RUNS[:3], 2), (RUNS, 7)):
        collection, auto, manual = _collection(tmp_path / str(size), runs=runs, size=size)
        with CaptureQueriesContext(db) as queries:
            response = organiser.get(url(collection), {"judge_a": auto.name, "judge_b": manual.name})
        assert response.status_code == 200
        counts.append(len(queries))

    assert counts[0] == counts[1] <= 25
