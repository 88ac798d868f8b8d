"""nuggetizer's created-nugget and assignment files: import, export, and the byte-for-byte round trip."""

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.formats.base import ImportFailed
from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    MAX_NUGGET_TEXT,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetImportanceJudgment,
    Response,
    Turn,
)
from annotation.rag_nuggets.formats import OVERALL_QID, SCORE_NAMES, AnswerScores, scores_text
from annotation.rag_nuggets.io import (
    assignments_export,
    assignments_import,
    created_nuggets_export,
    created_nuggets_import,
)
from annotation.rag_nuggets.writer import NuggetDraft, nugget_list_replace
from console.models import ImportJob
from tests.factories import CollectionFactory, OrganiserFactory
from tests.rag_nugget_files import (
    RUNS,
    assignment_records,
    assignments_file,
    created_nuggets_file,
    nugget_lists,
    rag_collection,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(tmp_path):
    collection = CollectionFactory()
    rag_collection(tmp_path, collection)
    return collection


def _export(command, *args):
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def test_it_round_trips_created_nuggets_byte_for_byte(collection, tmp_path):
    lists = nugget_lists()
    # nuggetizer lists questions in its own order, not the collection's: that order comes back.
    lists = dict(reversed(list(lists.items())))
    path = created_nuggets_file(tmp_path / "nuggets.jsonl", lists)

    call_command("import_nuggets", str(path), collection=collection.name, judge="gpt-4o", fmt="nuggetizer")
    text = _export(
        "export_nuggets", "--collection", collection.name, "--judge", "gpt-4o", "--format", "nuggetizer"
    )

    assert text.encode() == path.read_bytes()
    judge = Judge.objects.get(name="gpt-4o")
    turn = Turn.objects.get(collection=collection, turn_id="2024-2")
    stored = list(Nugget.objects.filter(judge=judge, turn=turn).values_list("key", "text", "position"))
    assert stored == [(str(i + 1), text, i) for i, (text, _) in enumerate(lists["2024-2"])]
    importance = dict(
        NuggetImportanceJudgment.objects.filter(judge=judge, nugget__turn=turn).values_list(
            "nugget__text", "importance"
        )
    )
    assert importance == dict(lists["2024-2"])
    assert set(NuggetImportanceJudgment.objects.filter(judge=judge).values_list("condition", flat=True)) == {
        "imported"
    }


def test_it_imports_the_same_created_nuggets_twice_without_change(collection, tmp_path):
    path = created_nuggets_file(tmp_path / "nuggets.jsonl", nugget_lists())
    judge = Judge.objects.create(name="llm", kind=Judge.Kind.LLM)
    created_nuggets_import(path=path, collection=collection, judge=judge)
    ids = sorted(Nugget.objects.filter(judge=judge).values_list("pk", flat=True))

    again = created_nuggets_import(path=path, collection=collection, judge=judge)

    assert (again.created, again.updated, again.deleted) == (0, 0, 0)
    assert again.unchanged == 12 + 12
    assert sorted(Nugget.objects.filter(judge=judge).values_list("pk", flat=True)) == ids


def test_it_drops_the_nuggets_of_a_question_the_new_file_leaves_out(collection, tmp_path):
    judge = Judge.objects.create(name="llm", kind=Judge.Kind.LLM)
    lists = nugget_lists()
    created_nuggets_import(
        path=created_nuggets_file(tmp_path / "a.jsonl", lists), collection=collection, judge=judge
    )
    del lists["2024-10"]

    result = created_nuggets_import(
        path=created_nuggets_file(tmp_path / "b.jsonl", lists), collection=collection, judge=judge
    )

    assert result.deleted == 4
    assert not Nugget.objects.filter(judge=judge, turn__turn_id="2024-10").exists()


def test_it_rejects_a_created_nuggets_file_naming_its_line(collection, tmp_path):
    path = tmp_path / "bad.jsonl"
    good = {"query": "q", "qid": "2024-1", "nuggets": [{"text": "a", "importance": "vital"}]}
    bad = {"query": "q", "qid": "9999", "nuggets": [{"text": "a", "importance": "essential"}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")

    with pytest.raises(CommandError) as caught:
        call_command("import_nuggets", str(path), collection=collection.name, judge="llm", fmt="nuggetizer")

    assert f"{path}:2: nugget 1: importance must be vital, okay or failed, not 'essential'" in str(
        caught.value
    )
    assert f"{path}:2: qid 9999 is not a question of collection" not in str(caught.value)
    assert not Nugget.objects.exists()
    assert not Judge.objects.filter(name="llm").exists()


def test_it_round_trips_assignments_byte_for_byte_creating_the_nugget_lists(collection, tmp_path):
    records = assignment_records(nugget_lists())
    path = assignments_file(tmp_path / "assignments.jsonl", records)

    call_command("import_nugget_assignments", str(path), collection=collection.name, judge="gpt-4o-assign")
    text = _export("export_nugget_assignments", "--collection", collection.name, "--judge", "gpt-4o-assign")

    assert text.encode() == path.read_bytes()
    judge = Judge.objects.get(name="gpt-4o-assign")
    assert NuggetAssignment.objects.filter(judge=judge).count() == 3 * 3 * 4
    assert Nugget.objects.filter(judge=judge).count() == 3 * 4
    row = records[4]
    stored = dict(
        NuggetAssignment.objects.filter(
            judge=judge, response__run__name=row["run_id"], response__turn__turn_id=row["qid"]
        ).values_list("nugget__text", "label")
    )
    assert stored == {n["text"]: n["assignment"] for n in row["nuggets"]}


def test_it_writes_the_assignments_a_run_at_a_time_reading_each_runs_labels_when_it_comes(
    collection, tmp_path
):
    # 810,000 labels at TREC RAG's size: a run's labels are read when its lines are written, so the
    # export holds one run's, not all of them.
    path = assignments_file(tmp_path / "assignments.jsonl", assignment_records(nugget_lists()))
    judge = Judge.objects.create(name="gpt-4o-assign", kind=Judge.Kind.LLM)
    assignments_import(path=path, collection=collection, judge=judge)

    def label_reads(queries):
        return sum('FROM "annotation_nuggetassignment"' in query["sql"] for query in queries)

    lines = assignments_export(collection=collection, judge=judge)
    first = next(lines)
    with CaptureQueriesContext(connection) as after_first:
        rest = list(lines)

    assert (first + "".join(rest)).encode() == path.read_bytes()
    assert label_reads(after_first.captured_queries) == len(RUNS) - 1


def test_it_matches_assignments_to_another_judges_nuggets_and_is_idempotent(collection, tmp_path):
    lists = nugget_lists()
    nugget_judge = Judge.objects.create(name="nuggets", kind=Judge.Kind.LLM)
    created_nuggets_import(
        path=created_nuggets_file(tmp_path / "n.jsonl", lists), collection=collection, judge=nugget_judge
    )
    assigner = Judge.objects.create(name="assigner", kind=Judge.Kind.LLM)
    path = assignments_file(tmp_path / "a.jsonl", assignment_records(lists))

    first = assignments_import(path=path, collection=collection, judge=assigner, nuggets_judge=nugget_judge)
    again = assignments_import(path=path, collection=collection, judge=assigner, nuggets_judge=nugget_judge)

    assert first.created == 36 + 12
    assert (again.created, again.updated, again.unchanged) == (0, 0, 36 + 12)
    assert not Nugget.objects.filter(judge=assigner).exists()
    assert set(
        NuggetAssignment.objects.filter(judge=assigner).values_list("nugget__judge__name", flat=True)
    ) == {"nuggets"}


def test_it_rejects_assignments_of_an_unknown_answer_or_nugget_naming_the_line(collection, tmp_path):
    lists = nugget_lists()
    nugget_judge = Judge.objects.create(name="nuggets", kind=Judge.Kind.LLM)
    created_nuggets_import(
        path=created_nuggets_file(tmp_path / "n.jsonl", lists), collection=collection, judge=nugget_judge
    )
    records = assignment_records(lists)
    records[1]["run_id"] = "run-z"
    records[2]["nuggets"][0]["text"] = "not a nugget"
    path = assignments_file(tmp_path / "a.jsonl", records)
    assigner = Judge.objects.create(name="assigner", kind=Judge.Kind.LLM)

    with pytest.raises(ImportFailed) as caught:
        assignments_import(path=path, collection=collection, judge=assigner, nuggets_judge=nugget_judge)

    assert caught.value.problems == [
        f"{path}:2: run run-z has no answer to qid 2024-2 in {collection.name}",
        f"{path}:3: nugget 'not a nugget' is not one of nuggets's nuggets for qid 2024-10",
    ]
    assert not NuggetAssignment.objects.exists()


def test_it_imports_nuggetizer_files_from_the_upload_page(client, collection, tmp_path):
    client.force_login(OrganiserFactory())
    lists = nugget_lists()
    nuggets = created_nuggets_file(tmp_path / "n.jsonl", lists)
    assignments = assignments_file(tmp_path / "a.jsonl", assignment_records(lists))
    url = reverse("console-collection", args=[collection.name])

    first = client.post(
        url,
        {
            "kind": "nuggetizer-nuggets",
            "file": SimpleUploadedFile("n.jsonl", nuggets.read_bytes()),
            "judge": "llm",
        },
        follow=True,
    )
    second = client.post(
        url,
        {
            "kind": "nugget-assignments",
            "file": SimpleUploadedFile("a.jsonl", assignments.read_bytes()),
            "judge": "llm-assign",
            "nugget_judge": "llm",
        },
        follow=True,
    )

    assert first.status_code == second.status_code == 200
    assert [(row["kind"], row["created"]) for row in ImportJob.objects.order_by("pk")[1].result] == [
        ("assignments", 36),
        ("importance labels of llm-assign", 12),
    ]
    assert Nugget.objects.filter(judge__name="llm").count() == 12
    assert NuggetAssignment.objects.filter(judge__name="llm-assign", nugget__judge__name="llm").count() == 36


def test_it_keeps_a_question_without_nuggets_in_the_round_trip(collection, tmp_path):
    lists = nugget_lists()
    lists["2024-2"] = []
    path = created_nuggets_file(tmp_path / "nuggets.jsonl", lists)
    judge = Judge.objects.create(name="llm", kind=Judge.Kind.LLM)

    created_nuggets_import(path=path, collection=collection, judge=judge)

    assert created_nuggets_export(collection=collection, judge=judge).encode() == path.read_bytes()
    assert not Nugget.objects.filter(judge=judge, turn__turn_id="2024-2").exists()


def test_it_rejects_an_answer_text_that_is_not_the_runs_answer_and_a_numeric_qid(collection, tmp_path):
    records = assignment_records(nugget_lists())
    records[0]["answer_text"] = "Something else entirely."
    records[3]["qid"] = 2024
    path = assignments_file(tmp_path / "a.jsonl", records)
    judge = Judge.objects.create(name="llm", kind=Judge.Kind.LLM)

    with pytest.raises(ImportFailed) as caught:
        assignments_import(path=path, collection=collection, judge=judge)

    assert caught.value.problems == [
        f"{path}:1: answer_text is not run run-a's answer to qid 2024-1: 'Something else entirely.'",
        f"{path}:4: 'qid' must be a string, as nuggetizer writes it",
    ]
    assert not Nugget.objects.exists()


def test_it_writes_the_scores_file_as_nuggetizer_does(tmp_path):
    rows = [AnswerScores("2024-1", 0.5, 0.25, 0.75, 1 / 3), AnswerScores(OVERALL_QID, 0.0, 0.0, 0.0, 0.0)]
    path = tmp_path / "metrics.jsonl"
    path.write_text(scores_text(rows))

    read = [json.loads(line) for line in path.read_text().splitlines()]
    assert [AnswerScores(obj["qid"], *(obj[name] for name in SCORE_NAMES)) for obj in read] == rows
    assert path.read_text().splitlines()[0] == (
        '{"qid": "2024-1", "strict_vital_score": 0.5, "strict_all_score": 0.25, "vital_score": 0.75, '
        '"all_score": 0.3333333333333333}'
    )


def test_a_reimport_that_changes_only_the_reported_length_keeps_the_answers_and_their_labels(
    collection, tmp_path
):
    path = assignments_file(tmp_path / "assignments.jsonl", assignment_records(nugget_lists()))
    call_command("import_nugget_assignments", str(path), collection=collection.name, judge="gpt-4o-assign")
    labels = NuggetAssignment.objects.count()
    answers = tmp_path / "answers.jsonl"
    lines = [json.loads(line) for line in answers.read_text().splitlines()]
    for line in lines:
        line["response_length"] += 1
    answers.write_text("".join(json.dumps(line) + "\n" for line in lines))

    call_command("import_run", str(answers), collection=collection.name)

    assert NuggetAssignment.objects.count() == labels
    first = lines[0]
    stored = Response.objects.get(run__name=first["run_id"], turn__turn_id=first["topic_id"])
    assert stored.response_length == first["response_length"]


def test_it_says_a_nugget_listed_twice_in_one_answer_is_listed_twice(collection, tmp_path):
    lists = nugget_lists()
    nugget_judge = Judge.objects.create(name="nuggets", kind=Judge.Kind.LLM)
    created_nuggets_import(
        path=created_nuggets_file(tmp_path / "n.jsonl", lists), collection=collection, judge=nugget_judge
    )
    records = assignment_records(lists)
    records[0]["nuggets"].append(dict(records[0]["nuggets"][0]))
    path = assignments_file(tmp_path / "a.jsonl", records)

    with pytest.raises(ImportFailed) as caught:
        assignments_import(
            path=path,
            collection=collection,
            judge=Judge.objects.create(name="assigner", kind=Judge.Kind.LLM),
            nuggets_judge=nugget_judge,
        )

    text = records[0]["nuggets"][0]["text"]
    assert caught.value.problems == [
        f"{path}:1: nugget '{text}' is listed 2 times in this answer, but nuggets's list for qid 2024-1 has it "
        "once: an answer labels each nugget of the list once"
    ]


def test_it_refuses_a_nugget_text_over_the_length_limit_naming_the_line(collection, tmp_path):
    lists = nugget_lists()
    lists["2024-2"][1] = ("x" * (MAX_NUGGET_TEXT + 1), "okay")
    path = created_nuggets_file(tmp_path / "n.jsonl", lists)

    with pytest.raises(ImportFailed) as caught:
        created_nuggets_import(
            path=path, collection=collection, judge=Judge.objects.create(name="llm", kind=Judge.Kind.LLM)
        )

    assert caught.value.problems == [
        f"{path}:2: nugget 2 has {MAX_NUGGET_TEXT + 1:,} characters; a nugget has at most {MAX_NUGGET_TEXT:,}"
    ]
    with pytest.raises(JudgmentRefused, match="at most 1,000"):
        nugget_list_replace(
            judge=Judge.objects.create(name="editor", kind=Judge.Kind.LLM),
            turn=Turn.objects.get(turn_id="2024-1"),
            nuggets=[NuggetDraft("1", "y" * (MAX_NUGGET_TEXT + 1))],
        )


def test_it_takes_nuggetizers_record_of_a_skipped_topic_only_as_nuggetizer_writes_it(collection, tmp_path):
    lists = nugget_lists()
    records = assignment_records(lists)
    Response.objects.filter(run__name="run-b", turn__turn_id="2024-2").delete()
    skipped = next(r for r in records if (r["run_id"], r["qid"]) == ("run-b", "2024-2"))
    skipped.update(answer_text="", response_length=0)
    for nugget in skipped["nuggets"]:
        nugget["assignment"] = "not_support"
    path = assignments_file(tmp_path / "a.jsonl", records)
    judge = Judge.objects.create(name="assigner", kind=Judge.Kind.LLM)

    assignments_import(path=path, collection=collection, judge=judge)
    exported = _export("export_nugget_assignments", "--collection", collection.name, "--judge", "assigner")
    answered = _export(
        "export_nugget_assignments", "--collection", collection.name, "--judge", "assigner", "--answered-only"
    )
    skipped["nuggets"][0]["assignment"] = "support"
    refused = assignments_file(tmp_path / "b.jsonl", records)
    with pytest.raises(ImportFailed) as caught:
        assignments_import(path=refused, collection=collection, judge=judge)

    assert exported.encode() == path.read_bytes()
    assert '"run_id": "run-b"' in answered and len(answered.splitlines()) == len(records) - 1
    line = records.index(skipped) + 1
    assert caught.value.problems == [
        f"{refused}:{line}: run run-b did not answer qid 2024-2: its record must label every nugget "
        "not_support, as nuggetizer writes it"
    ]
