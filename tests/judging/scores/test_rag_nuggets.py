"""The four TREC RAG nugget scores, equal to the nuggetizer package's on the same assignments."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection as db
from django.test.utils import CaptureQueriesContext
from nuggetizer.core.metrics import calculate_global_metrics, calculate_nugget_scores

from annotation.models import Judge, NuggetAssignment, NuggetImportanceJudgment
from annotation.rag_nuggets.io import assignments_import, created_nuggets_import
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.scores.rag_nuggets import nugget_scores
from tests.factories import CollectionFactory
from tests.rag_nugget_files import (
    RUNS,
    assignment_records,
    assignments_file,
    created_nuggets_file,
    nugget_lists,
    rag_collection,
)

pytestmark = pytest.mark.django_db


def _lists(size=5):
    lists = nugget_lists(seed=3, size=size)
    # A question without a vital nugget: its vital scores are 0 by nuggetizer's rule.
    lists["2024-10"] = [(text, "okay") for text, _ in lists["2024-10"]]
    return lists


def _loaded(tmp_path, size=5, seed=1):
    tmp_path.mkdir(exist_ok=True)
    collection = CollectionFactory()
    rag_collection(tmp_path, collection)
    lists = _lists(size)
    records = assignment_records(lists, seed=seed)
    judge = Judge.objects.create(name=f"assigner-{size}", kind=Judge.Kind.LLM)
    assignments_import(
        path=assignments_file(tmp_path / "a.jsonl", records), collection=collection, judge=judge
    )
    return collection, judge, records


def test_it_scores_answers_and_runs_exactly_as_nuggetizer(tmp_path):
    collection, judge, records = _loaded(tmp_path)

    scores = nugget_scores(collection=collection, judge=judge)

    expected_answers = {
        (r["run_id"], r["qid"]): vars(calculate_nugget_scores(r["qid"], r["nuggets"])) for r in records
    }
    assert len(scores["answers"]) == len(records)
    for answer in scores["answers"]:
        expected = expected_answers[answer["run_id"], answer["qid"]]
        assert {name: answer[name] for name in SCORE_NAMES} == {name: expected[name] for name in SCORE_NAMES}
    for run in RUNS:
        reference = calculate_global_metrics([r for r in records if r["run_id"] == run])
        assert scores["runs"][run] == {name: reference[name] for name in SCORE_NAMES}
    assert any(a["vital_score"] not in (0.0, 1.0) for a in scores["answers"])


def test_it_reads_the_same_number_of_queries_whatever_the_size(tmp_path):
    small, small_judge, _ = _loaded(tmp_path / "s", size=2)
    large, large_judge, _ = _loaded(tmp_path / "l", size=8)

    with CaptureQueriesContext(db) as few:
        nugget_scores(collection=small, judge=small_judge)
    with CaptureQueriesContext(db) as many:
        nugget_scores(collection=large, judge=large_judge)

    # The assigned nuggets, the nuggets' owners and topics, their sets, the importance labels, the counts
    # summed per answer, the answers given, the run and turn names.
    assert len(few) == len(many) == 8


def test_it_counts_the_importance_judges_vital_labels(tmp_path):
    collection, judge, records = _loaded(tmp_path)
    other = Judge.objects.create(name="assessor-file", kind=Judge.Kind.IMPORTED)
    lists = {qid: [(t, "vital") for t, _ in nuggets] for qid, nuggets in _lists().items()}
    created_nuggets_import(
        path=created_nuggets_file(tmp_path / "n.jsonl", lists), collection=collection, judge=other
    )
    # The other judge labels the assigner's nuggets vital, every one of them.
    for label in NuggetImportanceJudgment.objects.filter(judge=judge):
        NuggetImportanceJudgment.objects.create(judge=other, nugget=label.nugget, importance="vital")

    scores = nugget_scores(collection=collection, judge=judge, importance_judge=other)

    everything_vital = [
        {**r, "nuggets": [{**n, "importance": "vital"} for n in r["nuggets"]]}
        for r in records
        if r["run_id"] == "run-b"
    ]
    reference = calculate_global_metrics(everything_vital)
    assert scores["runs"]["run-b"] == {name: reference[name] for name in SCORE_NAMES}


def test_it_prints_the_scores_as_json_and_as_nuggetizers_metrics_file(tmp_path):
    collection, judge, records = _loaded(tmp_path)
    out = StringIO()

    call_command("nugget_scores", collection=collection.name, judge=judge.name, format="json", stdout=out)
    payload = json.loads(out.getvalue())
    metrics = tmp_path / "metrics.jsonl"
    call_command(
        "nugget_scores",
        collection=collection.name,
        judge=judge.name,
        format="nuggetizer",
        run="run-c",
        output=str(metrics),
    )

    assert set(payload) == {"runs", "answers", "nuggets", "unlabelled_nuggets", "importance_warning"}
    assert (payload["unlabelled_nuggets"], payload["importance_warning"]) == (0, "")
    assert payload["nuggets"] == len({n["text"] for r in records for n in r["nuggets"]})
    assert set(payload["runs"]["run-a"]) == set(SCORE_NAMES)
    assert set(payload["answers"][0]) == {"run_id", "qid", "answered", "nuggets", *SCORE_NAMES}
    # What nuggetizer's calculate_metrics script writes for run-c's assignment file.
    run_records = [r for r in records if r["run_id"] == "run-c"]
    expected = (
        "".join(
            json.dumps({"qid": m.qid, **{n: getattr(m, n) for n in SCORE_NAMES}}) + "\n"
            for m in (calculate_nugget_scores(r["qid"], r["nuggets"]) for r in run_records)
        )
        + json.dumps(calculate_global_metrics(run_records))
        + "\n"
    )
    assert metrics.read_text() == expected


def test_it_refuses_a_judge_without_assignments(tmp_path):
    collection, _judge, _ = _loaded(tmp_path)
    Judge.objects.create(name="idle", kind=Judge.Kind.LLM)

    with pytest.raises(Exception, match="idle has assigned no nuggets"):
        call_command("nugget_scores", collection=collection.name, judge="idle")


def test_it_says_when_the_vital_scores_lack_importance_labels_instead_of_reading_them_as_zero(tmp_path):
    collection, judge, records = _loaded(tmp_path)
    labels = NuggetImportanceJudgment.objects.filter(judge=judge).order_by("id")
    labels.filter(pk=labels[0].pk).delete()
    some, some_err = StringIO(), StringIO()
    call_command("nugget_scores", collection=collection.name, judge=judge.name, stdout=some, stderr=some_err)
    labels.delete()  # a post-edited list, say, that nobody has labelled vital or okay yet
    none, none_err, as_json = StringIO(), StringIO(), StringIO()
    call_command("nugget_scores", collection=collection.name, judge=judge.name, stdout=none, stderr=none_err)
    call_command("nugget_scores", collection=collection.name, judge=judge.name, format="json", stdout=as_json)

    total = len({n["text"] for r in records for n in r["nuggets"]})
    assert (
        f"1 nugget of {total} scored has no vital/okay label from the assignment judge or their own judge"
        in some_err.getvalue()
    )
    assert "n/a" not in some.getvalue()
    assert f"none of the {total} nuggets scored has a vital/okay label" in none_err.getvalue()
    rows = none.getvalue().splitlines()[1:]
    assert rows and all(row.split()[1] == "n/a" and row.split()[3] == "n/a" for row in rows)
    payload = json.loads(as_json.getvalue())
    assert (payload["nuggets"], payload["unlabelled_nuggets"]) == (total, total)
    assert "--importance-judge" in payload["importance_warning"]


def test_it_counts_a_failed_importance_as_no_vital_okay_label(tmp_path):
    collection, judge, records = _loaded(tmp_path)
    # nuggetizer's "failed": its LLM gave no readable importance; the scores count it as okay.
    NuggetImportanceJudgment.objects.filter(judge=judge).update(importance="failed")

    scores = nugget_scores(collection=collection, judge=judge)

    total = len({n["text"] for r in records for n in r["nuggets"]})
    assert (scores["nuggets"], scores["unlabelled_nuggets"]) == (total, total)
    assert all(v["strict_vital_score"] == v["vital_score"] == 0 for v in scores["runs"].values())


def test_a_topic_nobody_labelled_is_left_out_and_an_unlabelled_answer_of_a_labelled_topic_scores_0(tmp_path):
    collection, judge, records = _loaded(tmp_path)
    NuggetAssignment.objects.filter(judge=judge, response__turn__turn_id="2024-10").delete()
    NuggetAssignment.objects.filter(
        judge=judge, response__turn__turn_id="2024-2", response__run__name="run-a"
    ).delete()

    scores = nugget_scores(collection=collection, judge=judge)
    answered_only = nugget_scores(collection=collection, judge=judge, answered_only=True)

    assert {a["qid"] for a in scores["answers"]} == {"2024-1", "2024-2"}
    unlabelled = next(a for a in scores["answers"] if (a["run_id"], a["qid"]) == ("run-a", "2024-2"))
    assert (unlabelled["answered"], unlabelled["nuggets"], unlabelled["all_score"]) == (True, 0, 0.0)
    kept = [r for r in records if r["run_id"] == "run-a" and r["qid"] == "2024-1"]
    assert answered_only["runs"]["run-a"] == {
        name: calculate_global_metrics(kept)[name] for name in SCORE_NAMES
    }
    assert scores["runs"]["run-a"]["all_score"] == answered_only["runs"]["run-a"]["all_score"] / 2
