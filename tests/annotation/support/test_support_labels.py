"""import_support_labels / export_support_labels: the JSONL shape in and out, all or nothing, idempotent."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.formats.base import ImportFailed
from annotation.models import Condition, Judge, ResponseSentence, SupportJudgment
from annotation.support.io import support_labels_import
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def labels_path(fixtures_dir):
    return fixtures_dir / "support" / "gpt4o_labels.jsonl"


def test_it_imports_labels_onto_the_cited_units(rag, labels_path):
    out = StringIO()
    call_command(
        "import_support_labels",
        str(labels_path),
        collection="rag24",
        judge="gpt-4o",
        judge_kind="llm",
        stdout=out,
    )

    assert "7 created, 0 updated, 0 unchanged" in out.getvalue()
    judge = Judge.objects.get(name="gpt-4o")
    assert judge.kind == Judge.Kind.LLM
    rows = SupportJudgment.objects.filter(judge=judge)
    assert rows.count() == 7
    first = rows.get(
        sentence__response__run__name="rag-a", sentence__response__turn__turn_id="2024-1", sentence__index=0
    )
    assert (first.citation_index, first.passage_id, first.label, first.condition) == (
        0,
        "msmarco_v2.1_doc_01#1",
        "PS",
        Condition.MACHINE,
    )


def test_importing_the_same_file_twice_changes_nothing(rag, labels_path):
    call_command(
        "import_support_labels", str(labels_path), collection="rag24", judge="gpt-4o", stdout=StringIO()
    )
    before = list(SupportJudgment.objects.order_by("id").values_list("id", "label", "updated_at"))
    out = StringIO()

    call_command("import_support_labels", str(labels_path), collection="rag24", judge="gpt-4o", stdout=out)

    assert "0 created, 0 updated, 7 unchanged" in out.getvalue()
    assert list(SupportJudgment.objects.order_by("id").values_list("id", "label", "updated_at")) == before


def test_a_corrected_label_is_updated_in_place(rag, labels_path, tmp_path):
    call_command(
        "import_support_labels", str(labels_path), collection="rag24", judge="gpt-4o", stdout=StringIO()
    )
    lines = labels_path.read_text().splitlines()
    fixed = json.loads(lines[0]) | {"label": "NS"}
    path = tmp_path / "fixed.jsonl"
    path.write_text(json.dumps(fixed) + "\n")

    call_command("import_support_labels", str(path), collection="rag24", judge="gpt-4o", stdout=StringIO())

    row = SupportJudgment.objects.get(
        sentence__response__run__name="rag-a", sentence__response__turn__turn_id="2024-1", sentence__index=0
    )
    assert row.label == "NS"
    assert SupportJudgment.objects.count() == 7


def test_it_rejects_the_whole_file_with_file_and_line_of_each_problem(rag, fixtures_dir):
    path = fixtures_dir / "support" / "labels_bad.jsonl"

    with pytest.raises(CommandError) as failure:
        call_command("import_support_labels", str(path), collection="rag24", judge="gpt-4o")

    message = str(failure.value)
    assert f"{path}:3: label 'maybe' is not FS, PS or NS" in message
    assert SupportJudgment.objects.count() == 0
    assert not Judge.objects.filter(name="gpt-4o").exists()


def test_it_rejects_a_sentence_the_run_does_not_have_and_a_passage_it_does_not_cite(rag, tmp_path):
    path = tmp_path / "labels.jsonl"
    rows = [
        {
            "run_id": "rag-a",
            "topic_id": "2024-1",
            "sentence_index": 0,
            "passage_id": "msmarco_v2.1_doc_01#1",
            "label": "FS",
        },
        {
            "run_id": "rag-a",
            "topic_id": "2024-1",
            "sentence_index": 9,
            "passage_id": "msmarco_v2.1_doc_01#1",
            "label": "FS",
        },
        {
            "run_id": "rag-a",
            "topic_id": "2024-1",
            "sentence_index": 1,
            "passage_id": "msmarco_v2.1_doc_01#1",
            "label": "FS",
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    with pytest.raises(CommandError) as failure:
        call_command("import_support_labels", str(path), collection="rag24", judge="gpt-4o")

    message = str(failure.value)
    assert f"{path}:2: run rag-a has no sentence 9 for topic 2024-1" in message
    assert f"{path}:3: sentence 1 of run rag-a topic 2024-1 does not cite msmarco_v2.1_doc_01#1" in message
    assert SupportJudgment.objects.count() == 0


def test_it_rejects_a_unit_labelled_twice_in_one_file(rag, tmp_path):
    row = {
        "run_id": "rag-a",
        "topic_id": "2024-1",
        "sentence_index": 0,
        "passage_id": "msmarco_v2.1_doc_01#1",
    }
    path = tmp_path / "twice.jsonl"
    path.write_text(json.dumps(row | {"label": "FS"}) + "\n" + json.dumps(row | {"label": "NS"}) + "\n")

    with pytest.raises(
        CommandError, match=r"twice.jsonl:2: the same unit is labelled twice \(first on line 1\)"
    ):
        call_command("import_support_labels", str(path), collection="rag24", judge="gpt-4o")


def test_export_writes_back_the_shape_it_imports(rag, labels_path, tmp_path):
    call_command(
        "import_support_labels", str(labels_path), collection="rag24", judge="gpt-4o", stdout=StringIO()
    )
    output = tmp_path / "out.jsonl"

    call_command("export_support_labels", collection="rag24", judge="gpt-4o", output=str(output))

    exported = [json.loads(line) for line in output.read_text().splitlines()]
    original = [json.loads(line) for line in labels_path.read_text().splitlines()]
    assert exported == original


def test_export_names_an_unknown_judge(rag):
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        call_command("export_support_labels", collection="rag24", judge="nobody")


def test_a_bad_line_deep_in_a_large_file_is_named_and_nothing_is_written(tmp_path):
    # More lines than a block of the stage holds, so the problems are found after several blocks are in.
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection, number="7"), turn_id="7_1")
    response = ResponseFactory(run=RunFactory(collection=collection, name="big"), turn=turn)
    count = 12_000
    ResponseSentence.objects.bulk_create(
        ResponseSentence(response=response, index=index, text=f"s{index}", citations=["p:0", f"p:{index}"])
        for index in range(count)
    )
    judge = JudgeFactory(name="gpt-4o")
    rows = [
        {
            "run_id": "big",
            "topic_id": "7_1",
            "sentence_index": index,
            "passage_id": f"p:{index}",
            "label": "FS",
        }
        for index in range(count)
    ]
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(row) + "\n" for row in rows))
    rows[11_499] = rows[11_499] | {"passage_id": "p:elsewhere"}
    rows.append(rows[1] | {"label": "NS"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(row) + "\n" for row in rows))

    with pytest.raises(ImportFailed) as failure:
        support_labels_import(path=bad, collection=collection, judge=judge)

    assert failure.value.problems == [
        f"{bad}:11500: sentence 11499 of run big topic 7_1 does not cite p:elsewhere",
        f"{bad}:12001: the same unit is labelled twice (first on line 2)",
    ]
    assert not SupportJudgment.objects.exists()

    result = support_labels_import(path=good, collection=collection, judge=judge)

    assert (result.created, result.updated, result.unchanged) == (count, 0, 0)
    assert SupportJudgment.objects.get(judge=judge, sentence__index=11_499).citation_index == 1
