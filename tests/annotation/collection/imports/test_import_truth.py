"""Imports that tell the truth: a file's judge is the kind it says (an LLM's qrels are an LLM's), a
progress counter counts each record once, a rejected file names all its problems in one pass, and a
CONE-RAG gold response file refused for its nugget judge says what to do."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from annotation.formats.base import MAX_PROBLEMS, ImportFailed
from annotation.models import GoldResponse, Judge, Nugget, RelevanceJudgment
from annotation.nuggets.io import nuggets_import
from annotation.ptkb.io import ptkb_qrels_import
from annotation.relevance.io import qrels_import
from console.models import ImportJob
from tests.background import IMMEDIATE
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    PtkbStatementFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _reports_in_request(settings):
    """A task runs as it is queued, so the live agreement's first poll computes its stored figures."""
    settings.TASKS = IMMEDIATE


QRELS = "1_1 0 doc:1 2\n1_1 0 doc:2 0\n1_2 0 doc:1 4\n"


@pytest.fixture
def collection():
    collection = CollectionFactory(name="truth")
    topic = TopicFactory(collection=collection, number="1")
    TurnFactory(topic=topic, turn_id="1_1", position=1)
    TurnFactory(topic=topic, turn_id="1_2", position=2)
    return collection


@pytest.fixture
def qrels(tmp_path):
    path = tmp_path / "gpt4.qrels"
    path.write_text(QRELS, encoding="utf-8")
    return path


def upload(client, collection, name: str, content: bytes, kind: str, **options):
    return client.post(
        reverse("console-collection", args=[collection.name]),
        {"kind": kind, "file": SimpleUploadedFile(name, content), **options},
        follow=True,
    )


def assessor_grade(collection, passage_id: str = "doc:1", grade: int = 2) -> Judge:
    assessor = AssessorJudgeFactory()
    RelevanceJudgmentFactory(
        judge=assessor, turn=collection.turns.get(turn_id="1_1"), passage_id=passage_id, grade=grade
    )
    return assessor


# --- The judge's kind ------------------------------------------------------------------------------


def test_it_imports_qrels_as_an_llm_judge_that_the_live_agreement_page_compares(
    client, organiser, collection, qrels
):
    assessor = assessor_grade(collection)

    call_command(
        "import_qrels",
        str(qrels),
        collection=collection.name,
        judge="gpt4-qrels",
        judge_kind="llm",
        model="gpt-4",
        prompt_version="umbrela-v1",
    )
    response = client.get(reverse("judging:agreement-live-data", args=[collection.name]))

    assert response.status_code == 200
    payload = response.json()
    assert payload["llm_judges"] == ["gpt4-qrels"]
    [row] = payload["assessors"]
    assert row["judge"] == assessor.name
    assert [(m["judge"], m["n"], m["exact_agreement"]) for m in row["llm"]] == [("gpt4-qrels", 1, 1.0)]
    judge = Judge.objects.get(name="gpt4-qrels")
    assert (judge.kind, judge.model, judge.prompt_version) == (Judge.Kind.LLM, "gpt-4", "umbrela-v1")
    assert RelevanceJudgment.objects.filter(judge=judge).count() == 3


def test_a_console_qrels_upload_marks_its_judge_as_an_llm(client, organiser, collection):
    assessor_grade(collection)

    response = upload(
        client,
        collection,
        "gpt4.qrels",
        QRELS.encode(),
        "qrels",
        judge="gpt4-qrels",
        judge_kind="llm",
        model="gpt-4",
    )

    assert response.status_code == 200
    assert b'id="import-done"' in response.content
    live = client.get(reverse("judging:agreement-live-data", args=[collection.name])).json()
    assert live["llm_judges"] == ["gpt4-qrels"]
    judge = Judge.objects.get(name="gpt4-qrels")
    assert (judge.kind, judge.model) == (Judge.Kind.LLM, "gpt-4")
    assert ImportJob.objects.get().options["judge_kind"] == "llm"


@pytest.mark.parametrize(
    ("command", "content"),
    [
        ("import_qrels", QRELS),
        ("import_ptkb_qrels", "1_1 0 s1 1\n"),
        ("import_nuggets", '{"1_1": {"[1]": {"text": "a fact", "relevance": "2"}}}'),
    ],
)
def test_every_import_command_takes_the_judge_kind(collection, tmp_path, command, content):
    PtkbStatementFactory(topic=collection.topics.get(), statement_id="s1")
    path = tmp_path / "labels.txt"
    path.write_text(content, encoding="utf-8")
    extra = {"fmt": "cone-rag"} if command == "import_nuggets" else {}

    call_command(
        command, str(path), collection=collection.name, judge="nli-1", judge_kind="nli", model="m", **extra
    )

    judge = Judge.objects.get(name="nli-1")
    assert (judge.kind, judge.model) == (Judge.Kind.NLI, "m")


def test_a_new_judge_is_still_an_imported_file_by_default(collection, qrels):
    call_command("import_qrels", str(qrels), collection=collection.name, judge="nist")

    assert Judge.objects.get(name="nist").kind == Judge.Kind.IMPORTED


def test_it_refuses_a_file_as_an_assessor_judge_and_says_why(collection, qrels):
    with pytest.raises(CommandError, match="an assessor judge holds one user account's own labels"):
        call_command(
            "import_qrels", str(qrels), collection=collection.name, judge="someone", judge_kind="assessor"
        )

    assert not Judge.objects.filter(name="someone").exists()
    assert not RelevanceJudgment.objects.exists()


def test_it_refuses_to_change_an_existing_judges_kind_and_keeps_its_labels(collection, qrels):
    call_command("import_qrels", str(qrels), collection=collection.name, judge="gpt4-qrels")
    before = list(RelevanceJudgment.objects.values_list("id", "grade"))
    qrels.write_text(QRELS.replace("doc:2 0", "doc:2 3"), encoding="utf-8")

    with pytest.raises(
        CommandError, match=r"judge 'gpt4-qrels' exists with kind 'imported', not kind 'llm'.*new judge"
    ):
        call_command(
            "import_qrels", str(qrels), collection=collection.name, judge="gpt4-qrels", judge_kind="llm"
        )

    assert Judge.objects.get(name="gpt4-qrels").kind == Judge.Kind.IMPORTED
    assert list(RelevanceJudgment.objects.values_list("id", "grade")) == before


def test_it_refuses_another_model_for_an_existing_llm_judge(collection, qrels):
    JudgeFactory(name="gpt4-qrels", kind=Judge.Kind.LLM, model="gpt-4")

    with pytest.raises(CommandError, match="exists with model 'gpt-4', not model 'gpt-4o'"):
        call_command(
            "import_qrels",
            str(qrels),
            collection=collection.name,
            judge="gpt4-qrels",
            judge_kind="llm",
            model="gpt-4o",
        )

    assert not RelevanceJudgment.objects.exists()


def test_an_import_without_a_kind_leaves_an_existing_llm_judge_as_it_is(collection, qrels):
    JudgeFactory(name="gpt4-qrels", kind=Judge.Kind.LLM, model="gpt-4")

    call_command("import_qrels", str(qrels), collection=collection.name, judge="gpt4-qrels")

    judge = Judge.objects.get(name="gpt4-qrels")
    assert (judge.kind, judge.model) == (Judge.Kind.LLM, "gpt-4")
    assert RelevanceJudgment.objects.filter(judge=judge).count() == 3


def test_a_console_upload_refuses_to_change_a_judges_kind(client, organiser, collection):
    JudgeFactory(name="nist")

    response = upload(client, collection, "q.qrels", QRELS.encode(), "qrels", judge="nist", judge_kind="llm")

    assert response.status_code == 200
    assert b"exists with kind &#x27;imported&#x27;, not kind &#x27;llm&#x27;" in response.content
    assert ImportJob.objects.get().status == ImportJob.Status.FAILED
    assert Judge.objects.get(name="nist").kind == Judge.Kind.IMPORTED
    assert not RelevanceJudgment.objects.exists()


# --- Progress counts each record once ----------------------------------------------------------------


def test_the_qrels_progress_counts_each_grade_once(collection, qrels):
    told: list[tuple[int, int]] = []

    qrels_import(
        path=qrels, collection=collection, judge=JudgeFactory(), progress=lambda d, t: told.append((d, t))
    )

    assert told[-1] == (3, 3)
    assert {total for _, total in told} == {3}


def test_the_import_page_says_what_its_count_counts(client, organiser, collection):
    job = ImportJob.objects.create(
        collection=collection,
        kind="qrels",
        file_name="q.qrels",
        stored_path="/x",
        status=ImportJob.Status.RUNNING,
        done=5,
        total=10,
        started_at=timezone.now() - timedelta(seconds=1),
        heartbeat_at=timezone.now(),
    )

    response = client.get(reverse("console-import", args=[collection.name, job.pk]))

    assert response.status_code == 200
    assert b'data-unit="grades stored">5 of 10 grades stored</span>' in response.content


# --- Every problem in one pass -------------------------------------------------------------------------


def test_it_names_unknown_turns_together_with_bad_lines_in_line_order(collection, tmp_path):
    path = tmp_path / "bad.qrels"
    path.write_text("9_9 0 doc:1 2\n1_1 0 doc:2 NONE\n1_1 0 doc:3 7\n8_1 0 doc:1 1\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert [p.removeprefix(f"{path}:") for p in failed.value.problems] == [
        "1: turn 9_9 is not in collection truth (import its topics first)",
        "2: grade 'NONE' is not an integer",
        "3: grade 7 is outside the scale 0-4",
        "4: turn 8_1 is not in collection truth (import its topics first)",
    ]
    assert not RelevanceJudgment.objects.exists()


def test_it_keeps_the_first_problems_and_counts_the_rest(collection, tmp_path):
    path = tmp_path / "bad.qrels"
    path.write_text("".join(f"1_1 0 doc:{i} NONE\n" for i in range(MAX_PROBLEMS + 15)), encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert len(failed.value.problems) == MAX_PROBLEMS
    assert failed.value.more == 15
    assert str(failed.value).endswith("\n... and 15 more")


def test_the_upload_page_says_how_many_more_problems_the_file_has(client, organiser, collection):
    content = "".join(f"1_1 0 doc:{i} NONE\n" for i in range(MAX_PROBLEMS + 3)).encode()

    response = upload(client, collection, "bad.qrels", content, "qrels", judge="nist")

    assert response.status_code == 200
    assert b"<code>... and 3 more problems</code>" in response.content
    assert len(ImportJob.objects.get().problems) == MAX_PROBLEMS + 1
    assert not Judge.objects.filter(name="nist").exists()


def test_ptkb_qrels_name_unknown_turns_together_with_bad_labels(collection, tmp_path):
    path = tmp_path / "bad.ptkb"
    path.write_text("1_1 0 s1 yes\n7_7 0 s1 1\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        ptkb_qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert [p.removeprefix(f"{path}:") for p in failed.value.problems] == [
        "1: label 'yes' is not 0 or 1",
        "2: turn 7_7 is not in collection truth",
    ]


# --- CONE-RAG gold responses --------------------------------------------------------------------------

CONE_TURNS = ["8_5", "6_14", "4_3", "0_4"]


@pytest.fixture
def cone(fixtures_dir):
    collection = CollectionFactory(name="cone")
    for turn_id in CONE_TURNS:
        number, position = turn_id.split("_")
        TurnFactory(
            topic=TopicFactory(collection=collection, number=number), turn_id=turn_id, position=int(position)
        )
    nuggets_import(
        path=fixtures_dir / "nuggets" / "gold_nuggets.cone-rag.json",
        collection=collection,
        judge=JudgeFactory(name="gold"),
        fmt="cone-rag",
    )
    return collection


def test_gold_responses_refused_for_the_passage_nuggets_say_what_to_do(cone, fixtures_dir):
    source = fixtures_dir / "nuggets" / "gold_responses.cone-rag.json"

    with pytest.raises(CommandError) as refused:
        call_command(
            "import_gold_responses",
            str(source),
            collection="cone",
            judge="nist",
            nugget_judge="gold",
            fmt="cone-rag",
        )

    message = str(refused.value)
    assert (
        "gold_responses.cone-rag.json:2: turn 4_3: 1 of its 1 nugget texts are not nuggets of gold" in message
    )
    assert "name as nugget judge a new judge (or one with no nuggets on these turns)" in message
    assert "leave the nugget judge out to create them as nist's own" in message
    assert not GoldResponse.objects.exists()
    assert not Judge.objects.filter(name="nist").exists()


def test_gold_responses_import_with_a_new_nugget_judge_named_for_them(cone, fixtures_dir):
    source = fixtures_dir / "nuggets" / "gold_responses.cone-rag.json"

    call_command(
        "import_gold_responses",
        str(source),
        collection="cone",
        judge="nist",
        nugget_judge="nist-response-nuggets",
        fmt="cone-rag",
    )

    response = GoldResponse.objects.get(judge__name="nist", turn__turn_id="6_14")
    assert sorted(response.nuggets.values_list("text", flat=True)) == [
        "UVA ages the skin",
        "UVB burns \u2013 the outer layer",
    ]
    assert Judge.objects.get(name="nist-response-nuggets").kind == Judge.Kind.IMPORTED
    assert Nugget.objects.filter(judge__name="nist-response-nuggets").count() == 4
    assert Nugget.objects.filter(judge__name="gold").count() == 7


def test_the_console_takes_a_new_nugget_judge_for_cone_rag_gold_responses(
    client, organiser, cone, fixtures_dir
):
    content = (fixtures_dir / "nuggets" / "gold_responses.cone-rag.json").read_bytes()

    response = upload(
        client,
        cone,
        "gold.json",
        content,
        "gold-responses",
        judge="nist",
        nugget_judge="nist-nuggets",
        fmt="cone-rag",
    )

    assert response.status_code == 200
    assert b'id="import-done"' in response.content
    assert GoldResponse.objects.filter(judge__name="nist").count() == 3
    assert Nugget.objects.filter(judge__name="nist-nuggets").count() == 4


def test_a_cut_of_the_released_qrels_names_a_bad_turn_and_grade_in_one_pass(shared_data, tmp_path):
    collection = CollectionFactory(name="ikat24")
    call_command("import_topics", str(shared_data / "ikat2024/2024_test_topics.json"), collection="ikat24")
    lines = (shared_data / "ikat2024/2024_test_qrels.trec").read_text().splitlines()
    path = tmp_path / "qrels.trec"
    path.write_text("\n".join([*lines[:100], "99_9 0 doc:x 1", "1_1 0 doc:y NONE"]) + "\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert [p.removeprefix(f"{path}:") for p in failed.value.problems] == [
        "101: turn 99_9 is not in collection ikat24 (import its topics first)",
        "102: grade 'NONE' is not an integer",
    ]
    assert failed.value.more == 0
    assert not RelevanceJudgment.objects.exists()
