"""Imports are atomic, idempotent, and name file and line for every problem they reject."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.formats.base import ImportFailed
from annotation.models import (
    Collection,
    Judge,
    Passage,
    PtkbStatement,
    Ranking,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    Run,
    Topic,
    Turn,
)
from annotation.relevance.io import qrels_import, qrels_lines
from annotation.services import collection_get_or_create, judge_get_or_create

pytestmark = pytest.mark.django_db

TOPICS = [
    {
        "number": "1-1",
        "title": "Diet",
        "ptkb": {"1": "I am vegetarian.", "2": "I live in Glasgow."},
        "turns": [
            {
                "turn_id": 1,
                "utterance": "Find me a diet.",
                "resolved_utterance": "Find me a vegetarian diet.",
            },
            {"turn_id": 2, "utterance": "And recipes?", "ptkb_provenance": [1]},
        ],
    },
    {"number": 2, "title": "Trip", "ptkb": {}, "turns": [{"turn_id": 1, "utterance": "Where to go?"}]},
]


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def counts() -> tuple[int, ...]:
    return (
        Topic.objects.count(),
        Turn.objects.count(),
        PtkbStatement.objects.count(),
        Passage.objects.count(),
        Run.objects.count(),
        Ranking.objects.count(),
        Response.objects.count(),
        RelevanceJudgment.objects.count(),
    )


@pytest.fixture
def collection(tmp_path) -> Collection:
    collection = collection_get_or_create(name="test")
    topics_import(path=write(tmp_path, "topics.json", json.dumps(TOPICS)), collection=collection)
    return collection


def test_it_builds_turn_ids_from_topic_number_and_turn_id(collection):
    assert sorted(collection.turns.values_list("turn_id", flat=True)) == ["1-1_1", "1-1_2", "2_1"]
    turn = collection.turns.get(turn_id="1-1_2")
    assert turn.topic.number == "1-1"
    assert turn.ptkb_provenance == ["1"]
    assert collection.topics.get(number="1-1").ptkb.count() == 2


def test_it_imports_the_same_topics_twice_without_change(collection, tmp_path):
    before = list(Turn.objects.values_list("id", "turn_id", "utterance"))
    result = topics_import(path=write(tmp_path, "topics.json", json.dumps(TOPICS)), collection=collection)
    assert (result.created, result.updated) == (0, 0)
    assert list(Turn.objects.values_list("id", "turn_id", "utterance")) == before


def test_it_imports_trec_tab_separated_topics(tmp_path):
    collection = collection_get_or_create(name="rag")
    topics_import(
        path=write(tmp_path, "t.tsv", "2024-1\twhat is rag\n2024-2\twhy kappa\n"), collection=collection
    )
    assert list(collection.turns.values_list("turn_id", "utterance")) == [
        ("2024-1", "what is rag"),
        ("2024-2", "why kappa"),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"number": 1, "turns": [{"turn_id": 1, "utterance": "x"}', "t.json:1: invalid JSON"),
        (
            '[{"number": 1,\n "turns": [\n  {"utterance": "x"}]}]',
            "t.json:3: topic 1: turn 1 has no 'turn_id'",
        ),
        (
            '[{"number": 1, "turns": [\n{"turn_id": 1, "utterance": "a"},\n{"turn_id": 1, "utterance": "b"}]}]',
            "t.json:3: duplicate turn id 1_1 (first on line 2)",
        ),
        (b'[{"number": 1, "title": "caf\xe9"}]', "t.json:1: not UTF-8"),
        ("", "t.json: the file is empty"),
        ("   \n", "t.json: the file is empty"),
    ],
)
def test_it_rejects_bad_topics_with_file_and_line_and_changes_nothing(collection, tmp_path, content, message):
    before = counts()
    with pytest.raises(ImportFailed) as excinfo:
        topics_import(path=write(tmp_path, "t.json", content), collection=collection)
    assert message in str(excinfo.value)
    assert counts() == before


def test_the_command_reports_problems_and_creates_no_collection(tmp_path):
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_topics", str(write(tmp_path, "t.json", "[")), collection="fresh")
    assert not Collection.objects.filter(name="fresh").exists()


def test_it_imports_ikat_and_generic_passages(collection, tmp_path):
    lines = [
        {"doc_id": "clueweb22-en0000-32-08101", "passage_id": "4", "passage_text": "Email is efficient."},
        {"id": "msmarco_v2.1_doc_1#2", "contents": "Generic body", "title": "T"},
    ]
    path = write(tmp_path, "p.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    passages_import(path=path, collection=collection)
    passages_import(path=path, collection=collection)
    assert sorted(collection.passages.values_list("passage_id", "title", "text")) == [
        ("clueweb22-en0000-32-08101:4", "", "Email is efficient."),
        ("msmarco_v2.1_doc_1#2", "T", "Generic body"),
    ]


def test_it_rejects_a_passage_line_without_text(collection, tmp_path):
    path = write(tmp_path, "p.jsonl", '{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    with pytest.raises(ImportFailed, match=r"p.jsonl:2: passage b has no text"):
        passages_import(path=path, collection=collection)
    assert Passage.objects.count() == 0


TREC_RUN = "1-1_1 Q0 d1 1 9.5 bm25\n1-1_1 Q0 d2 2 8.0 bm25\n2_1 Q0 d3 1 3.0 bm25\n"


def test_it_imports_a_trec_run_as_whole_rankings(collection, tmp_path):
    [(run, result)] = run_import(path=write(tmp_path, "run.txt", TREC_RUN), collection=collection)
    assert run.name == "bm25"
    assert result.created == 2
    ranking = Ranking.objects.get(run=run, turn__turn_id="1-1_1")
    assert (ranking.passage_ids, ranking.scores) == (["d1", "d2"], [9.5, 8.0])
    [(_, again)] = run_import(path=write(tmp_path, "run.txt", TREC_RUN), collection=collection)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1-1_1 Q0 d1 1 9.5 bm25\n1-1_1 Q0 d2 2 8.0\n", "run.txt:2: expected 6 columns"),
        ("1-1_1 Q0 d1 one 9.5 bm25\n", "run.txt:1: rank 'one' is not an integer"),
        ("1-1_1 Q0 d1 1 high bm25\n", "run.txt:1: score 'high' is not a number"),
        ("1-1_1 Q0 d1 1 9.5 bm25\n9_9 Q0 d1 1 9.5 bm25\n", "run.txt:2: turn 9_9 is not in collection test"),
        (b"1-1_1 Q0 d\xff 1 9.5 bm25\n", "run.txt:1: not UTF-8"),
        ("", "run.txt: the file is empty"),
    ],
)
def test_it_rejects_bad_run_files(collection, tmp_path, content, message):
    before = counts()
    with pytest.raises(ImportFailed) as excinfo:
        run_import(path=write(tmp_path, "run.txt", content), collection=collection)
    assert message in str(excinfo.value)
    assert counts() == before


def test_it_imports_trec_rag_answers_and_creates_unknown_topics(collection, tmp_path):
    answer = {
        "run_id": "rag-a",
        "topic_id": "2024-145979",
        "topic": "what is vicarious liability",
        "references": ["msmarco_v2.1_doc_1#0", "msmarco_v2.1_doc_2#5"],
        "response_length": 20,
        "answer": [
            {"text": "Vicarious liability holds employers liable.", "citations": [1]},
            {"text": "It is common in tort law.", "citations": [0, 1]},
            {"text": "Ask a lawyer.", "citations": []},
        ],
    }
    run_import(path=write(tmp_path, "a.jsonl", json.dumps(answer) + "\n"), collection=collection)
    turn = Turn.objects.get(collection=collection, turn_id="2024-145979")
    assert turn.utterance == "what is vicarious liability"
    sentences = ResponseSentence.objects.filter(response__turn=turn).order_by("index")
    assert [s.citations for s in sentences] == [
        ["msmarco_v2.1_doc_2#5"],
        ["msmarco_v2.1_doc_1#0", "msmarco_v2.1_doc_2#5"],
        [],
    ]


def test_it_rejects_a_citation_outside_references(collection, tmp_path):
    answer = {
        "run_id": "r",
        "topic_id": "2_1",
        "references": ["a"],
        "answer": [{"text": "x", "citations": [3]}],
    }
    path = write(tmp_path, "a.jsonl", "\n" + json.dumps(answer) + "\n")
    with pytest.raises(ImportFailed, match=r"a.jsonl:2: sentence 0: citation 3 is outside 'references'"):
        run_import(path=path, collection=collection)
    assert Run.objects.count() == 0


def test_it_imports_an_ikat_json_run(collection, tmp_path):
    run = {
        "run_name": "ikat-run",
        "run_type": "manual",
        "turns": [
            {
                "turn_id": "1-1_1",
                "responses": [
                    {
                        "rank": 1,
                        "text": "Try the Mediterranean diet.",
                        "ptkb_provenance": ["1"],
                        "passage_provenance": [
                            {"id": "p1", "score": 2.0, "used": True},
                            {"id": "p2", "score": 1.0, "used": False},
                        ],
                    }
                ],
            }
        ],
    }
    [(imported, _)] = run_import(path=write(tmp_path, "r.json", json.dumps(run)), collection=collection)
    assert imported.kind == Run.Kind.MANUAL
    assert Ranking.objects.get(run=imported).passage_ids == ["p1", "p2"]
    assert Response.objects.get(run=imported).references == ["p1"]


QRELS = "1-1_1 0 d1 2\n1-1_1 0 d2   0  \n2_1\t0\td3\t4\n"


def test_it_imports_qrels_tolerating_whitespace_and_exports_them_in_order(collection, tmp_path):
    judge = judge_get_or_create(name="nist")
    qrels_import(path=write(tmp_path, "q.txt", QRELS), collection=collection, judge=judge)
    assert list(qrels_lines(collection=collection, judge=judge)) == [
        "1-1_1 0 d1 2\n",
        "1-1_1 0 d2 0\n",
        "2_1 0 d3 4\n",
    ]
    result = qrels_import(path=write(tmp_path, "q.txt", QRELS), collection=collection, judge=judge)
    assert (result.created, result.updated, result.unchanged) == (0, 0, 3)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1-1_1 0 d1 2\n1-1_1 0 d2 7\n", "q.txt:2: grade 7 is outside the scale 0-4"),
        ("1-1_1 0 d1 NONE\n", "q.txt:1: grade 'NONE' is not an integer"),
        ("1-1_1 0 d1\n", "q.txt:1: expected 4 columns"),
        ("1-1_1 0 d1 1\n1-1_1 0 d1 2\n", "q.txt:2: 1-1_1 d1 is judged twice (first on line 1)"),
        (b"1-1_1 0 d1 1\n1-1_1 0 \xe9 1\n", "q.txt:2: not UTF-8"),
        ("", "q.txt: the file is empty"),
    ],
)
def test_it_rejects_bad_qrels_and_saves_none(collection, tmp_path, content, message):
    judge = judge_get_or_create(name="nist")
    with pytest.raises(ImportFailed) as excinfo:
        qrels_import(path=write(tmp_path, "q.txt", content), collection=collection, judge=judge)
    assert message in str(excinfo.value)
    assert RelevanceJudgment.objects.count() == 0


def test_it_requires_passages_when_asked(collection, tmp_path):
    Passage.objects.create(collection=collection, passage_id="d1", text="x")
    judge = judge_get_or_create(name="nist")
    path = write(tmp_path, "q.txt", "1-1_1 0 d1 2\n1-1_1 0 d9 1\n")
    with pytest.raises(ImportFailed, match=r"q.txt:2: passage d9 is not in collection test"):
        qrels_import(path=path, collection=collection, judge=judge, require_passages=True)
    assert RelevanceJudgment.objects.count() == 0
    qrels_import(path=path, collection=collection, judge=judge)
    assert RelevanceJudgment.objects.count() == 2


def test_replace_makes_the_judge_equal_the_file(collection, tmp_path):
    judge = judge_get_or_create(name="nist")
    qrels_import(path=write(tmp_path, "q.txt", QRELS), collection=collection, judge=judge)
    result = qrels_import(
        path=write(tmp_path, "q2.txt", "2_1 0 d3 3\n"), collection=collection, judge=judge, replace=True
    )
    assert (result.updated, result.deleted) == (1, 2)
    assert list(RelevanceJudgment.objects.values_list("passage_id", "grade")) == [("d3", 3)]


def test_the_qrels_command_creates_the_judge_only_when_the_import_succeeds(collection, tmp_path):
    with pytest.raises(CommandError, match="grade 9"):
        call_command(
            "import_qrels", str(write(tmp_path, "q.txt", "2_1 0 d 9\n")), collection="test", judge="bad"
        )
    assert not Judge.objects.filter(name="bad").exists()


# --- The real public iKAT data ---------------------------------------------------------------------


def test_the_real_ikat_2023_topics_and_passages_import(shared_data):
    collection = collection_get_or_create(name="ikat23")
    topics_import(path=shared_data / "ikat2023/2023_test_topics.json", collection=collection)
    passages_import(path=shared_data / "ikat2023/2023_test_topics_psg_text.jsonl", collection=collection)
    assert (collection.topics.count(), collection.turns.count()) == (25, 332)
    assert PtkbStatement.objects.filter(topic__collection=collection).count() == 262
    assert collection.passages.count() == 700
    assert collection.turns.filter(turn_id="9-1_1").exists()


def test_the_official_ikat_2024_qrels_round_trip(shared_data, tmp_path):
    collection = collection_get_or_create(name="ikat24")
    topics_import(path=shared_data / "ikat2024/2024_test_topics.json", collection=collection)
    assert (collection.topics.count(), collection.turns.count()) == (17, 218)
    assert PtkbStatement.objects.filter(topic__collection=collection).count() == 288
    qrels = shared_data / "ikat2024/2024_test_qrels.trec"
    call_command("import_qrels", str(qrels), collection="ikat24", judge="nist-qrels")
    out = tmp_path / "out.qrels"
    call_command("export_qrels", collection="ikat24", judge="nist-qrels", output=str(out))
    original = {" ".join(line.split()) for line in qrels.read_text().splitlines() if line.strip()}
    exported = out.read_text().splitlines()
    assert len(exported) == 20575
    assert set(exported) == original
    call_command("import_run", str(shared_data / "ikat2024/sample_run.json"), collection="ikat24")
    assert Ranking.objects.filter(run__name="sample_run").count() == 218


def test_the_import_commands_refuse_a_collection_name_that_is_not_a_slug(tmp_path):
    topics = write(tmp_path, "topics.json", json.dumps(TOPICS))
    with pytest.raises(CommandError, match="'my topics' is not a slug"):
        call_command("import_topics", str(topics), collection="my topics")
    with pytest.raises(CommandError, match="is not a slug"):
        call_command("import_passages", str(topics), collection="a/b")
    assert Collection.objects.count() == 0


def test_the_export_command_names_the_known_judges_when_the_judge_is_unknown(collection, tmp_path):
    judge_get_or_create(name="nist-qrels")
    with pytest.raises(CommandError, match="no judge named 'nist'; known judges: nist-qrels"):
        call_command("export_qrels", collection="test", judge="nist")


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            '{"turn_id": "1-1_1",\n "responses": ["just text"]}',
            "r.json:2: turn 1-1_1: every response must be",
        ),
        (
            '{"turn_id": "1-1_1", "responses": [\n{"rank": 1, "passage_provenance": ["p1"]}]}',
            "r.json:3: turn 1-1_1: passage_provenance entries must be objects",
        ),
    ],
)
def test_it_rejects_ikat_json_run_entries_that_are_not_objects(collection, tmp_path, turn, message):
    path = write(tmp_path, "r.json", '{"run_name": "r",\n "turns": [' + turn + "]}")
    before = counts()
    with pytest.raises(ImportFailed) as excinfo:
        run_import(path=path, collection=collection)
    assert message in str(excinfo.value)
    assert counts() == before
