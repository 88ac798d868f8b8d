"""A TREC RAG collection starts from the track's topics and answers alone, by command and in the console."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Collection, Response, ResponseSentence, Run, Topic, Turn
from console.models import ImportJob
from tests.core.test_bulk import planner_rows
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db

TOPICS_TSV = "2024-1\thow do bees make honey\n2024-2\twhy is the sky blue\n"


def answer(run: str, qid: str, text: str, topic: str = "") -> dict:
    return {
        "run_id": run,
        "topic_id": qid,
        "topic": topic,
        "references": ["msmarco_v2.1_doc_1#0"],
        "response_length": len(text.split()),
        "answer": [{"text": text, "citations": [0]}],
    }


def answers_file(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_import_run_create_starts_a_collection_from_trec_rag_answers(tmp_path):
    path = tmp_path / "rag-a.jsonl"
    path.write_bytes(
        answers_file(
            answer("rag-a", "2024-1", "Bees make honey from nectar.", topic="how do bees make honey"),
            answer("rag-a", "2024-2", "Air scatters blue light.", topic="why is the sky blue"),
        )
    )
    out = StringIO()

    call_command("import_run", str(path), "--collection", "rag24", "--create", stdout=out)

    assert "run rag-a: topics: 2 created, 0 updated, 0 unchanged; rankings: 0 created" in out.getvalue()
    rag24 = Collection.objects.get(name="rag24")
    assert list(
        Turn.objects.filter(collection=rag24).order_by("turn_id").values_list("turn_id", "utterance")
    ) == [
        ("2024-1", "how do bees make honey"),
        ("2024-2", "why is the sky blue"),
    ]
    assert Response.objects.filter(run__collection=rag24).count() == 2


def test_import_run_without_create_refuses_an_unknown_collection(tmp_path):
    path = tmp_path / "rag-a.jsonl"
    path.write_bytes(answers_file(answer("rag-a", "2024-1", "Bees make honey.")))

    with pytest.raises(CommandError, match="no collection named 'rag24'"):
        call_command("import_run", str(path), "--collection", "rag24", stdout=StringIO())

    assert not Collection.objects.exists()


def test_import_run_create_leaves_no_collection_when_the_file_is_refused(tmp_path):
    path = tmp_path / "bad.jsonl"
    bad = answer("rag-a", "2024-1", "Bees make honey.")
    bad["answer"][0]["citations"] = [3]
    path.write_bytes(answers_file(bad))

    with pytest.raises(CommandError, match="bad.jsonl:1: sentence 0: citation 3 is outside 'references'"):
        call_command("import_run", str(path), "--collection", "rag24", "--create", stdout=StringIO())

    assert not Collection.objects.exists()
    assert not Run.objects.exists()


def test_import_run_create_refuses_a_bad_collection_name(tmp_path):
    path = tmp_path / "rag-a.jsonl"
    path.write_bytes(answers_file(answer("rag-a", "2024-1", "Bees make honey.")))

    with pytest.raises(CommandError):
        call_command("import_run", str(path), "--collection", "bad name/x", "--create", stdout=StringIO())

    assert not Collection.objects.exists()


def test_the_track_topics_file_and_answers_meet_in_either_order(tmp_path):
    topics, answers = tmp_path / "topics.rag24.tsv", tmp_path / "rag-a.jsonl"
    topics.write_text(TOPICS_TSV)
    answers.write_bytes(answers_file(answer("rag-a", "2024-1", "Bees make honey from nectar.")))

    call_command("import_run", str(answers), "--collection", "rag24", "--create", stdout=StringIO())
    call_command("import_topics", str(topics), "--collection", "rag24", stdout=StringIO())

    rag24 = Collection.objects.get(name="rag24")
    assert Topic.objects.filter(collection=rag24).count() == 2
    assert Turn.objects.get(collection=rag24, turn_id="2024-1").utterance == "how do bees make honey"
    assert Response.objects.get(run__collection=rag24).turn.turn_id == "2024-1"


def test_an_organiser_starts_a_trec_rag_collection_in_the_console_from_its_answers(client):
    client.force_login(OrganiserFactory())
    new_page = client.get(reverse("console-collection-new"))
    assert "for a TREC RAG collection the track's answers alone" in new_page.content.decode()
    created = client.post(reverse("console-collection-new"), {"name": "rag24"}, follow=True)
    assert created.status_code == 200
    assert "TREC RAG answers as a run" in created.content.decode()
    assert "a TREC RAG collection starts" in created.content.decode()
    content = answers_file(
        answer("rag-a", "2024-1", "Bees make honey from nectar.", topic="how do bees make honey"),
        answer("rag-b", "2024-1", "Honey is sweet.", topic="how do bees make honey"),
    )

    uploaded = client.post(
        reverse("console-collection", args=["rag24"]),
        {"kind": ImportJob.Kind.RUN, "file": SimpleUploadedFile("answers.jsonl", content)},
        follow=True,
    )
    topics = client.post(
        reverse("console-collection", args=["rag24"]),
        {"kind": ImportJob.Kind.TOPICS, "file": SimpleUploadedFile("topics.tsv", TOPICS_TSV.encode())},
        follow=True,
    )

    assert uploaded.status_code == 200 and topics.status_code == 200
    assert list(ImportJob.objects.order_by("pk").values_list("kind", "status")) == [
        (ImportJob.Kind.RUN, ImportJob.Status.DONE),
        (ImportJob.Kind.TOPICS, ImportJob.Status.DONE),
    ]
    run_job = ImportJob.objects.get(kind=ImportJob.Kind.RUN)
    # The topic the answers created is told once, by the first run naming it.
    assert [(r["kind"], r["created"]) for r in run_job.result] == [
        ("run rag-a: topics", 1),
        ("run rag-a: rankings", 0),
        ("run rag-a: responses", 1),
        ("run rag-b: rankings", 0),
        ("run rag-b: responses", 1),
    ]
    rag24 = Collection.objects.get(name="rag24")
    assert sorted(Run.objects.filter(collection=rag24).values_list("name", flat=True)) == ["rag-a", "rag-b"]
    assert list(
        Turn.objects.filter(collection=rag24).order_by("turn_id").values_list("turn_id", flat=True)
    ) == [
        "2024-1",
        "2024-2",
    ]


def test_an_import_command_tells_the_planner_of_the_rows_it_wrote(tmp_path):
    # Uncommitted, the test's rows are counted by nothing but the command's own ANALYZE.
    path = tmp_path / "rag-a.jsonl"
    path.write_bytes(
        answers_file(
            *(answer("rag-a", f"2024-{k}", "Bees make honey. From nectar.", topic="bees") for k in range(29))
        )
    )

    call_command("import_run", str(path), "--collection", "rag24", "--create", stdout=StringIO())

    assert planner_rows(Response) == Response.objects.count() >= 29
    assert planner_rows(ResponseSentence) == ResponseSentence.objects.count()


def test_an_imported_answer_sentence_is_marked_a_placeholder_by_the_support_rule(tmp_path):
    # The sentences are written by COPY, past the field's own pre_save: the writer applies the same rule.
    path = tmp_path / "rag-a.jsonl"
    path.write_bytes(
        answers_file(
            answer("rag-a", "2024-1", "<placeholder text for response 1>", topic="bees"),
            answer("rag-a", "2024-2", "Air scatters blue light.", topic="sky"),
        )
    )

    call_command("import_run", str(path), "--collection", "rag24", "--create", stdout=StringIO())

    assert dict(ResponseSentence.objects.values_list("text", "placeholder")) == {
        "<placeholder text for response 1>": True,
        "Air scatters blue light.": False,
    }
