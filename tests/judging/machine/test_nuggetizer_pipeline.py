"""The whole TREC RAG nugget evaluation from the files nuggetizer writes, back to nuggetizer: created nuggets
(an empty list, a `failed` importance, a nugget without one) and assignments (a topic a run skipped,
`failed` labels) go in through the commands, an importance judge of its own labels the nuggets, and the
scores Assay gives equal what nuggetizer's calculate_metrics gives on Assay's exports, per answer and per
run, under the default importance and under the separate judge."""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from nuggetizer.core.metrics import calculate_global_metrics, calculate_nugget_scores

from annotation.collection.io import run_import
from annotation.models import Condition, Judge, Nugget, NuggetAssignment, NuggetImportanceJudgment
from annotation.rag_nuggets.writer import ImportanceRow, importance_judgments_upsert
from tests.factories import CollectionFactory, OrganiserFactory
from tests.judging.helpers import report_page
from tests.rag_nugget_files import QUESTIONS, answer_sentences, reported_length

pytestmark = pytest.mark.django_db

SCORES = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")
RUNS = ("run-a", "run-b", "run-c")
SKIPPED = ("run-c", "2024-10")  # run-c gave no answer to this question
EMPTY = "2024-2"  # nuggetizer made no nugget for this question


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _calculate_metrics(path: Path) -> tuple[list[dict], dict]:
    """nuggetizer's scripts/calculate_metrics.py on an assignments file: per-record metrics, then the
    global mean (the script's own calls, on the records as it reads them)."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    per_answer = [vars(calculate_nugget_scores(r["qid"], r["nuggets"])) for r in records]
    return per_answer, calculate_global_metrics(records)


def _nuggetizer_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The answers file (TREC RAG 2024) and the two files nuggetizer writes from it: created nuggets and,
    per run, assignments (here all runs in one file, as a track concatenates them)."""
    answers = [
        {
            "run_id": run,
            "topic_id": qid,
            "topic": question,
            "references": ["d1"],
            "response_length": reported_length(run, qid),
            "answer": [{"text": s, "citations": [0]} for s in answer_sentences(run, qid)],
        }
        for run in RUNS
        for qid, question in QUESTIONS.items()
        if (run, qid) != SKIPPED
    ]
    created = [
        {
            "query": QUESTIONS["2024-1"],
            "qid": "2024-1",
            "nuggets": [
                {"text": "nuggets are facts", "importance": "vital"},
                {"text": "nuggets are short", "importance": "okay"},
                {"text": "the scorer failed here", "importance": "failed"},
                {"text": "a nugget without importance"},
            ],
        },
        {"query": QUESTIONS[EMPTY], "qid": EMPTY, "nuggets": []},
        {
            "query": QUESTIONS["2024-10"],
            "qid": "2024-10",
            "nuggets": [
                {"text": "accents matter \u00e9", "importance": "vital"},
                {"text": "they change words", "importance": "okay"},
                {"text": "they are old", "importance": "vital"},
            ],
        },
    ]
    rng = random.Random(7)
    assignments = []
    for run in RUNS:
        given = {a["topic_id"]: a for a in answers if a["run_id"] == run}
        for record in created:
            # What nuggetizer's assign step writes: the importance its adapter gives (vital when none),
            # the LLM's label or "failed"; for a topic the run skipped, an empty answer labelled
            # not_support throughout without a call.
            answer = given.get(record["qid"], {"answer": [], "response_length": 0})
            skipped = not answer["answer"]
            assignments.append(
                {
                    "query": record["query"],
                    "qid": record["qid"],
                    "answer_text": " ".join(a["text"] for a in answer["answer"]),
                    "response_length": answer["response_length"],
                    "run_id": run,
                    "nuggets": [
                        {
                            "text": n["text"],
                            "importance": n.get("importance", "vital"),
                            "assignment": "not_support"
                            if skipped
                            else rng.choice(["support", "partial_support", "not_support", "failed"]),
                        }
                        for n in record["nuggets"]
                    ],
                }
            )
    return (
        _jsonl(tmp_path / "answers.jsonl", answers),
        _jsonl(tmp_path / "nuggets.jsonl", created),
        _jsonl(tmp_path / "assignments.jsonl", assignments),
    )


def _scores(collection, judge, **options) -> dict:
    out = StringIO()
    call_command(
        "nugget_scores", collection=collection.name, judge=judge, format="json", stdout=out, **options
    )
    return json.loads(out.getvalue())


def _export(tmp_path: Path, name: str, *args: str) -> Path:
    path = tmp_path / name
    call_command(*args, "--output", str(path))
    return path


def _assert_equal_to_nuggetizer(payload: dict, export: Path) -> None:
    """Per answer and per run, Assay's scores equal nuggetizer's calculate_metrics on the export, run by
    run (nuggetizer scores one run's assignments file at a time)."""
    records = [json.loads(line) for line in export.read_text().splitlines()]
    assert sorted((r["run_id"], r["qid"]) for r in records) == sorted(
        (a["run_id"], a["qid"]) for a in payload["answers"]
    )
    for run in RUNS:
        run_file = _jsonl(export.with_suffix(f".{run}.jsonl"), [r for r in records if r["run_id"] == run])
        per_answer, overall = _calculate_metrics(run_file)
        mine = [a for a in payload["answers"] if a["run_id"] == run]
        assert [{k: a[k] for k in ("qid", *SCORES)} for a in mine] == per_answer
        assert payload["runs"][run] == {k: overall[k] for k in SCORES}


def test_nuggetizers_files_go_through_assay_and_score_as_nuggetizer_scores_them(tmp_path, client):
    collection = CollectionFactory(name="rag-e2e")
    answers, nuggets, assignments = _nuggetizer_files(tmp_path)
    run_import(path=answers, collection=collection)
    name = collection.name

    call_command("import_nuggets", str(nuggets), collection=name, judge="gpt-4o-nuggets", fmt="nuggetizer")
    report = StringIO()
    call_command(
        "import_nugget_assignments",
        str(assignments),
        collection=name,
        judge="gpt-4o-assign",
        nuggets_judge="gpt-4o-nuggets",
        stdout=report,
    )
    # An importance judge of its own (an LLM of the vital/okay step) labels gpt-4o's nuggets.
    vital_judge = Judge.objects.create(name="llm-vital", kind=Judge.Kind.LLM)
    listed = Nugget.objects.filter(judge__name="gpt-4o-nuggets").order_by("pk")
    importance_judgments_upsert(
        judge=vital_judge,
        collection=collection,
        rows=[ImportanceRow(n.pk, "vital" if i % 2 else "okay") for i, n in enumerate(listed)],
        condition=Condition.SCRATCH,
    )

    # The import kept what nuggetizer wrote: "failed" labels, the default importance, the file's
    # importance as the assignment judge's own labels (named in the report), nothing for the skipped topic.
    assert "importance labels of gpt-4o-assign: 7 created" in report.getvalue()
    assert NuggetAssignment.objects.filter(judge__name="gpt-4o-assign", label="failed").exists()
    assert dict(
        NuggetImportanceJudgment.objects.filter(judge__name="gpt-4o-nuggets").values_list(
            "nugget__text", "importance"
        )
    ) == {
        "nuggets are facts": "vital",
        "nuggets are short": "okay",
        "the scorer failed here": "failed",
        "a nugget without importance": "vital",
        "accents matter \u00e9": "vital",
        "they change words": "okay",
        "they are old": "vital",
    }
    assert not NuggetAssignment.objects.filter(
        judge__name="gpt-4o-assign", response__run__name=SKIPPED[0], response__turn__turn_id=SKIPPED[1]
    ).exists()

    # Default importance: the file's own; the export is the file nuggetizer wrote, byte for byte.
    default = _scores(collection, "gpt-4o-assign")
    exported = _export(
        tmp_path,
        "export-default.jsonl",
        "export_nugget_assignments",
        "--collection",
        name,
        "--judge",
        "gpt-4o-assign",
    )
    assert exported.read_bytes() == assignments.read_bytes()
    _assert_equal_to_nuggetizer(default, exported)
    _assert_equal_to_nuggetizer(default, assignments)
    # Every run is scored on all three topics: the empty list and the skipped topic count as 0.
    assert len(default["answers"]) == 9
    skipped = next(a for a in default["answers"] if (a["run_id"], a["qid"]) == SKIPPED)
    assert (skipped["answered"], skipped["all_score"]) == (False, 0.0)
    assert all(a["all_score"] == 0.0 and a["answered"] for a in default["answers"] if a["qid"] == EMPTY)

    # The separate importance judge, chosen in the scores and in the export.
    by_vital_judge = _scores(collection, "gpt-4o-assign", importance_judge="llm-vital")
    exported = _export(
        tmp_path,
        "export-llm-vital.jsonl",
        "export_nugget_assignments",
        "--collection",
        name,
        "--judge",
        "gpt-4o-assign",
        "--importance-judge",
        "llm-vital",
    )
    _assert_equal_to_nuggetizer(by_vital_judge, exported)
    assert by_vital_judge["runs"] != default["runs"]

    # The same choices on the scores page, and its assignments download: the same scores, the same file.
    client.force_login(OrganiserFactory())
    choices = {"judge": "gpt-4o-assign", "importance_judge": "llm-vital"}
    table = report_page(client, reverse("judging:nugget-scores", args=[name]), choices).context["table"]
    download = client.get(reverse("judging:nugget-scores-download", args=[name, "assignments"]), choices)
    assert {row.run: dict(row.scores) for row in table.rows} == by_vital_judge["runs"]
    assert download.status_code == 200 and download.getvalue() == exported.read_bytes()

    # nuggetizer's per-answer metrics file of one run, as its calculate_metrics writes it.
    metrics = _export(
        tmp_path,
        "metrics.jsonl",
        "nugget_scores",
        "--collection",
        name,
        "--judge",
        "gpt-4o-assign",
        "--importance-judge",
        "llm-vital",
        "--format",
        "nuggetizer",
        "--run",
        "run-c",
    )
    run_c = _jsonl(
        tmp_path / "run-c.jsonl", [json.loads(x) for x in exported.read_text().splitlines() if '"run-c"' in x]
    )
    per_answer, overall = _calculate_metrics(run_c)
    assert metrics.read_text() == "".join(json.dumps(m) + "\n" for m in [*per_answer, overall])

    # The created nuggets file comes back with the chosen importance.
    created = _export(
        tmp_path,
        "nuggets-llm-vital.jsonl",
        "export_nuggets",
        "--collection",
        name,
        "--judge",
        "gpt-4o-nuggets",
        "--format",
        "nuggetizer",
        "--importance-judge",
        "llm-vital",
    )
    first = json.loads(created.read_text().splitlines()[0])
    assert [n["importance"] for n in first["nuggets"]] == ["okay", "vital", "okay", "vital"]

    # Run rankings by the vital scores, under the chosen importance judge.
    call_command(
        "import_nugget_assignments",
        str(assignments),
        collection=name,
        judge="gpt-4o-assign-copy",
        nuggets_judge="gpt-4o-nuggets",
    )
    ranking = StringIO()
    call_command(
        "rank_agreement",
        collection=name,
        measure="nugget-strict-vital",
        judges=["gpt-4o-assign", "gpt-4o-assign-copy"],
        importance_judge="llm-vital",
        format="json",
        stdout=ranking,
    )
    report_json = json.loads(ranking.getvalue())
    assert (report_json["n_runs"], report_json["importance_judge"]) == (3, "llm-vital")
