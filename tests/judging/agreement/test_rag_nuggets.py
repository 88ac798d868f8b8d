"""Agreement on TREC RAG nugget labels: vital/okay and the three-level assignment, human against LLM,
by condition, and Kendall's tau between run rankings by the nugget scores; checked against scikit-learn
and scipy."""

import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotation.models import Judge, NuggetAssignment, NuggetImportanceJudgment
from annotation.rag_nuggets.io import assignments_import, created_nuggets_import
from annotation.rag_nuggets.writer import (
    AssignmentRow,
    ImportanceRow,
    importance_judgments_upsert,
    nugget_assignments_upsert,
)
from judging.models import HumanSample
from judging.scores.rag_nuggets import nugget_scores
from tests.factories import CollectionFactory, OrganiserFactory
from tests.rag_nugget_files import (
    LABELS,
    assignment_records,
    assignments_file,
    created_nuggets_file,
    nugget_lists,
    rag_collection,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]

RUNS = tuple(f"run-{i}" for i in range(6))
ORDER = ["not_support", "partial_support", "support"]


@pytest.fixture
def study(tmp_path):
    """An LLM's nuggets, vital/okay and assignments; a person's vital/okay (half from scratch, half
    post-editing) and assignments (from scratch) that differ from the LLM's now and then."""
    collection = CollectionFactory()
    rag_collection(tmp_path, collection, runs=RUNS)
    lists = nugget_lists(seed=5, size=6)
    llm = Judge.objects.create(name="gpt-4o", kind=Judge.Kind.LLM)
    created_nuggets_import(
        path=created_nuggets_file(tmp_path / "n.jsonl", lists), collection=collection, judge=llm
    )
    records = assignment_records(lists, seed=7, runs=RUNS)
    assignments_import(path=assignments_file(tmp_path / "a.jsonl", records), collection=collection, judge=llm)
    human = Judge.objects.create(name="assessor", kind=Judge.Kind.IMPORTED)
    rng = random.Random(11)
    machine_vital = list(NuggetImportanceJudgment.objects.filter(judge=llm).order_by("pk"))
    flip = {"vital": "okay", "okay": "vital"}
    rows = [
        ImportanceRow(j.nugget_id, flip[j.importance] if rng.random() < 0.3 else j.importance)
        for j in machine_vital
    ]
    half = len(rows) // 2
    importance_judgments_upsert(judge=human, collection=collection, rows=rows[:half], condition="scratch")
    importance_judgments_upsert(judge=human, collection=collection, rows=rows[half:], condition="post-edit")
    machine_labels = list(NuggetAssignment.objects.filter(judge=llm).order_by("pk"))
    nugget_assignments_upsert(
        judge=human,
        collection=collection,
        rows=[
            AssignmentRow(a.response_id, a.nugget_id, rng.choice(LABELS) if rng.random() < 0.4 else a.label)
            for a in machine_labels
        ],
        condition="scratch",
    )
    return collection, llm, human


def _agreement(collection, task, *extra):
    out = StringIO()
    call_command(
        "agreement",
        "--collection",
        collection.name,
        "--task",
        task,
        *extra,
        "--format",
        "json",
        "--resamples",
        "50",
        stdout=out,
    )
    return json.loads(out.getvalue())


def _labels(model, judge, field, **filters):
    return dict(
        ((row[0], row[1]), row[2]) for row in model.objects.filter(judge=judge, **filters).values_list(*field)
    )


def test_it_measures_assignment_agreement_with_weighted_kappa_and_the_confusion_matrix(study):
    collection, llm, human = study

    report = _agreement(collection, "nugget-assignment", "--judges", "assessor", "gpt-4o")

    fields = ("response_id", "nugget_id", "label")
    a, b = _labels(NuggetAssignment, human, fields), _labels(NuggetAssignment, llm, fields)
    units = sorted(a)
    x, y = [a[u] for u in units], [b[u] for u in units]
    assert report["n"] == len(units) == 6 * 3 * 6
    assert report["labels"] == ORDER
    assert report["cohen_kappa"] == pytest.approx(cohen_kappa_score(x, y, labels=ORDER))
    assert report["weighted_kappa_linear"] == pytest.approx(
        cohen_kappa_score(x, y, labels=ORDER, weights="linear")
    )
    assert report["weighted_kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(x, y, labels=ORDER, weights="quadratic")
    )
    assert report["confusion_matrix"] == confusion_matrix(x, y, labels=ORDER).tolist()


def test_it_measures_importance_agreement_by_condition(study):
    collection, llm, human = study

    scratch = _agreement(
        collection, "nugget-importance", "--judges", "assessor", "gpt-4o", "--condition", "scratch"
    )
    post_edit = _agreement(
        collection, "nugget-importance", "--judges", "assessor", "gpt-4o", "--condition", "post-edit"
    )

    fields = ("nugget_id", "nugget__turn_id", "importance")
    machine = _labels(NuggetImportanceJudgment, llm, fields)
    for report, condition in ((scratch, "scratch"), (post_edit, "post-edit")):
        person = _labels(NuggetImportanceJudgment, human, fields, condition=condition)
        units = sorted(person)
        x, y = [person[u] for u in units], [machine[u] for u in units]
        assert report["n"] == len(units) == 9
        assert report["condition"] == condition
        assert report["cohen_kappa"] == pytest.approx(cohen_kappa_score(x, y, labels=["okay", "vital"]))
        assert report["confusion_matrix"] == confusion_matrix(x, y, labels=["okay", "vital"]).tolist()
        assert report["weighted_kappa_linear"] is None


def test_it_refuses_a_condition_the_task_has_not(study):
    collection, _llm, _human = study

    with pytest.raises(Exception, match="condition"):
        _agreement(collection, "nugget-importance", "--judges", "assessor", "gpt-4o", "--condition", "blind")


@pytest.mark.parametrize(
    ("measure", "score"),
    [
        ("nugget-strict-vital", "strict_vital_score"),
        ("nugget-all", "all_score"),
        ("nugget-vital", "vital_score"),
    ],
)
def test_it_correlates_run_rankings_by_nugget_scores_as_scipy(study, measure, score):
    collection, llm, human = study
    out = StringIO()

    call_command(
        "rank_agreement",
        "--collection",
        collection.name,
        "--measure",
        measure,
        "--judges",
        "assessor",
        "gpt-4o",
        "--format",
        "json",
        stdout=out,
    )

    report = json.loads(out.getvalue())
    a = nugget_scores(collection=collection, judge=human)["runs"]
    b = nugget_scores(collection=collection, judge=llm)["runs"]
    runs = sorted(a)
    assert report["n_runs"] == len(RUNS)
    assert {row["run"]: row["score_a"] for row in report["runs"]} == {r: a[r][score] for r in runs}
    assert report["kendall_tau_b"] == pytest.approx(
        kendalltau([a[r][score] for r in runs], [b[r][score] for r in runs]).statistic
    )


def test_it_ranks_no_run_by_a_vital_score_when_no_nugget_has_an_importance_label(study):
    collection, _llm, _human = study
    NuggetImportanceJudgment.objects.all().delete()
    args = ["rank_agreement", "--collection", collection.name, "--judges", "assessor", "gpt-4o"]

    with pytest.raises(Exception, match="no run of collection .* has a nugget-vital score"):
        call_command(*args, "--measure", "nugget-vital", stdout=StringIO())
    out = StringIO()
    call_command(*args, "--measure", "nugget-all", "--format", "json", stdout=out)

    assert json.loads(out.getvalue())["n_runs"] == len(RUNS)


def test_it_shows_nugget_assignment_agreement_and_the_ranking_on_the_page(client, study):
    collection, llm, human = study
    client.force_login(OrganiserFactory())
    query = {"task": "nugget-assignment", "a": "assessor", "b": "gpt-4o", "condition": "scratch"}

    response = client.get(reverse("judging:agreement-report", args=[collection.name]), query)
    ranking = client.get(
        reverse("judging:agreement-ranking", args=[collection.name]),
        {"measure": "nugget-strict-all", "a": "assessor", "b": "gpt-4o"},
    )

    assert response.status_code == 200
    page = response.content.decode()
    fields = ("response_id", "nugget_id", "label")
    a, b = _labels(NuggetAssignment, human, fields), _labels(NuggetAssignment, llm, fields)
    units = sorted(a)
    kappa = cohen_kappa_score([a[u] for u in units], [b[u] for u in units], labels=ORDER)
    assert f"{kappa:.3f}" in page and "A: partial_support" in page
    assert ranking.status_code == 200
    assert "run-5" in ranking.content.decode()


def test_it_estimates_a_runs_nugget_score_from_the_people_and_the_llm(study):
    collection, _llm, human = study
    out = StringIO()

    call_command(
        "estimate",
        "--collection",
        collection.name,
        "--task",
        "nugget-assignment",
        "--measure",
        "vital_score",
        "--human-judge",
        "assessor",
        "--machine-judge",
        "gpt-4o",
        "--method",
        "classical",
        "--format",
        "json",
        stdout=out,
    )

    data = json.loads(out.getvalue())
    # Every turn has the person's labels: the classical estimate is the run's score under the person.
    truth = nugget_scores(collection=collection, judge=human)["runs"]
    assert set(data["runs"]) == set(RUNS)
    for run, row in data["runs"].items():
        assert row["estimate"] == pytest.approx(truth[run]["vital_score"])
        assert row["n_human"] == 3


def test_it_answers_400_for_a_condition_the_nugget_task_has_not(client, study):
    collection, _llm, _human = study
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-download", args=[collection.name, "report.json"])

    response = client.get(
        url, {"task": "nugget-importance", "a": "assessor", "b": "gpt-4o", "condition": "blind"}
    )
    kept = client.get(
        url, {"task": "nugget-importance", "a": "assessor", "b": "gpt-4o", "condition": "post-edit"}
    )

    assert response.status_code == 400
    body = response.json()
    assert body[
        "code"
    ] == "invalid" and "condition blind does not apply to the nugget-importance task" in str(body)
    assert kept.status_code == 200
    assert kept.json()["n"] == 9


def test_it_samples_nugget_turns_for_people_but_makes_no_crowd_work_for_them(study):
    collection, _llm, _human = study
    base = [
        "--collection",
        collection.name,
        "--task",
        "nugget-assignment",
        "--machine-judge",
        "gpt-4o",
        "--budget",
        "2",
    ]

    call_command(
        "sample_for_humans", *base, "--name", "stored", "--seed", "1", "--no-work", stdout=StringIO()
    )
    with pytest.raises(Exception, match="no work is made for nugget-assignment"):
        call_command("sample_for_humans", *base, "--name", "handed-out", "--seed", "1", stdout=StringIO())

    assert list(HumanSample.objects.filter(collection=collection).values_list("name", flat=True)) == [
        "stored"
    ]
    assert HumanSample.objects.get(name="stored").units.count() == 2


def test_nuggetizers_failed_labels_are_left_out_of_agreement(study):
    collection, llm, human = study
    failed = list(NuggetAssignment.objects.filter(judge=llm).order_by("pk")[:5])
    NuggetAssignment.objects.filter(pk__in=[a.pk for a in failed]).update(label="failed")

    report = _agreement(collection, "nugget-assignment", "--judges", "assessor", "gpt-4o")

    assert report["n"] == 6 * 3 * 6 - 5
    assert report["labels"] == ORDER


def test_the_ranking_page_ranks_runs_by_vital_scores_under_the_importance_judge_chosen(client, study):
    collection, llm, human = study
    client.force_login(OrganiserFactory())
    url = reverse("judging:agreement-ranking", args=[collection.name])
    query = {"measure": "nugget-strict-vital", "a": "assessor", "b": "gpt-4o", "format": "json"}

    page = client.get(url, {**query, "importance_judge": "assessor"})
    download = client.get(
        reverse("judging:agreement-ranking-download", args=[collection.name, "ranking.json"]),
        {**query, "importance_judge": "assessor"},
    )
    refused = client.get(url, {**query, "measure": "ndcg@5", "importance_judge": "assessor"})

    assert page.status_code == 200
    a = nugget_scores(collection=collection, judge=human, importance_judge=human)["runs"]
    b = nugget_scores(collection=collection, judge=llm, importance_judge=human)["runs"]
    runs = sorted(a)
    tau = kendalltau([a[r]["strict_vital_score"] for r in runs], [b[r]["strict_vital_score"] for r in runs])
    assert f"{tau.statistic:.3f}" in page.content.decode()
    assert download.status_code == 200
    report = download.json()
    assert {row["run"]: row["score_a"] for row in report["runs"]} == {
        r: pytest.approx(a[r]["strict_vital_score"]) for r in runs
    }
    assert report["importance_judge"] == "assessor"
    assert refused.status_code == 400
    assert "vital/okay labels apply to the nugget measures" in refused.content.decode()
