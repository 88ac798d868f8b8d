"""Every import names every problem of its file in one pass: bad lines and ids the collection lacks
together, in line order, the first MAX_PROBLEMS of the file shown and the rest counted, nothing written."""

from __future__ import annotations

import json

import pytest

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.formats.base import MAX_PROBLEMS, ImportFailed
from annotation.models import GoldResponse, Nugget, Passage, Ranking, Run, Topic, Turn
from annotation.nuggets.io import gold_responses_import, nuggets_import
from annotation.relevance.io import qrels_import
from tests.factories import CollectionFactory, JudgeFactory, TopicFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    collection = CollectionFactory(name="once")
    topic = TopicFactory(collection=collection, number="1")
    TurnFactory(topic=topic, turn_id="1_1", position=1)
    TurnFactory(topic=topic, turn_id="1_2", position=2)
    return collection


def problems_of(failed: pytest.ExceptionInfo[ImportFailed], path) -> list[str]:
    return [p.removeprefix(f"{path}:") for p in failed.value.problems]


def test_it_names_a_topic_clash_with_the_files_bad_turns_in_line_order(collection, tmp_path):
    TurnFactory(topic=TopicFactory(collection=collection, number="7"), turn_id="3_1")
    path = tmp_path / "topics.json"
    path.write_text(
        "[\n"
        '  {"number": "2", "turns": [{"turn_id": 1}]},\n'
        '  {"number": "3", "turns": [{"turn_id": 1, "utterance": "taken"}]}\n'
        "]\n",
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as failed:
        topics_import(path=path, collection=collection)

    assert problems_of(failed, path) == [
        "2: turn 2_1 has no 'utterance'",
        "3: turn 3_1 already belongs to topic 7",
    ]
    assert failed.value.more == 0
    assert not Topic.objects.filter(number__in=["2", "3"]).exists()


def test_it_names_a_clash_of_tab_separated_topics_at_its_line(collection, tmp_path):
    TurnFactory(topic=TopicFactory(collection=collection, number="7"), turn_id="8")
    path = tmp_path / "topics.tsv"
    path.write_text("5\tfive\n8\ttaken\nno tab here\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        topics_import(path=path, collection=collection)

    assert problems_of(failed, path) == [
        "2: turn 8 already belongs to topic 7",
        "3: expected 'id<TAB>query'",
    ]
    assert not Topic.objects.filter(number="5").exists()


def test_it_counts_every_bad_passage_line_past_the_first_ones(collection, tmp_path):
    path = tmp_path / "passages.jsonl"
    # Good lines between the bad ones: reading must not stop at the first good line once 50 are found.
    path.write_text(
        "".join(
            f'{{"id": "bad:{i}"}}\n{{"id": "doc:{i}", "text": "fine"}}\n' for i in range(MAX_PROBLEMS + 15)
        ),
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as failed:
        passages_import(path=path, collection=collection)

    assert len(failed.value.problems) == MAX_PROBLEMS
    assert failed.value.problems[0] == (
        f"{path}:1: passage bad:0 has no text ('passage_text', 'text' or 'contents')"
    )
    assert failed.value.more == 15
    assert str(failed.value).endswith("\n... and 15 more")
    assert not Passage.objects.exists()


def test_a_trec_run_names_its_unknown_turns_with_its_bad_lines(collection, tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(
        "1_1 Q0 doc:1 1 9.0 bm25\n9_9 Q0 doc:1 1 9.0 bm25\n1_2 Q0 doc:2 first 8.0 bm25\n8_8 Q0 doc:1 1 1 bm25\n",
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert problems_of(failed, path) == [
        "2: turn 9_9 is not in collection once (import its topics first)",
        "3: rank 'first' is not an integer",
        "4: turn 8_8 is not in collection once (import its topics first)",
    ]
    assert not Run.objects.exists()


def test_a_trec_run_with_several_tags_also_names_its_unknown_turns(collection, tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("1_1 Q0 doc:1 1 9.0 bm25\n9_9 Q0 doc:1 1 9.0 splade\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert failed.value.problems == [
        f"{path}: the file holds several run tags (bm25, splade); pass --name",
        f"{path}:2: turn 9_9 is not in collection once (import its topics first)",
    ]
    assert not Ranking.objects.exists()


def test_an_ikat_json_run_names_its_unknown_turns_with_its_bad_responses(collection, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(
        '{"run_name": "r", "turns": [\n'
        '  {"turn_id": "7_7", "responses": [{"rank": 1, "text": "a"}]},\n'
        '  {"turn_id": "1_1", "responses": [{"rank": "top", "text": "b"}]}\n'
        "]}\n",
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert problems_of(failed, path) == [
        "2: turn 7_7 is not in collection once (import its topics first)",
        "3: response rank 'top' is not an integer",
    ]
    assert not Run.objects.exists()


def test_rag_answers_count_every_bad_line_and_create_no_topic(collection, tmp_path):
    path = tmp_path / "answers.jsonl"
    lines = []
    for i in range(MAX_PROBLEMS + 3):
        lines.append({"run_id": "rag", "topic_id": f"new{i}", "references": [], "answer": [{"text": "x"}]})
        lines.append({"run_id": "rag"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert failed.value.problems[0] == f"{path}:2: answer without 'topic_id'"
    assert (len(failed.value.problems), failed.value.more) == (MAX_PROBLEMS, 3)
    assert not Turn.objects.filter(turn_id__startswith="new").exists()


def test_a_nugget_file_names_unknown_turns_and_refused_nuggets_with_its_bad_lines(collection, tmp_path):
    path = tmp_path / "nuggets.jsonl"
    lines = [
        {"turn_id": "1_1", "nugget_id": "[1]", "text": " "},
        {"turn_id": "9_9", "nugget_id": "[1]", "text": "unknown turn"},
        {"turn_id": "1_2", "text": "no key"},
        {"turn_id": "1_2", "nugget_id": "[2]", "text": "fine", "duplicate_of": "[3]"},
        {"turn_id": "1_2", "nugget_id": "[3]", "text": "a bad span", "start": 1},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        nuggets_import(path=path, collection=collection, judge=JudgeFactory())

    assert problems_of(failed, path) == [
        "1: nugget [1]: a nugget needs text",
        "2: turn 9_9 is not in collection once",
        "3: no 'nugget_id' (a string such as \"[1]\")",
        "5: give both 'start' and 'end', or neither",
    ]
    assert not Nugget.objects.exists()


def test_a_cone_rag_nugget_file_counts_every_problem(collection, tmp_path):
    path = tmp_path / "nuggets.json"
    turns = {f"9_{i}": {"[1]": {"text": "x", "relevance": "2"}} for i in range(MAX_PROBLEMS + 4)}
    path.write_text(json.dumps({"1_1": {"[1]": "not an object"}, **turns}, indent=1), encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        nuggets_import(path=path, collection=collection, judge=JudgeFactory(), fmt="cone-rag")

    assert failed.value.problems[:2] == [
        f'{path}:2: turn 1_1 nugget [1]: expected {{"text": ..., "relevance": ...}}',
        f"{path}:5: turn 9_0 is not in collection once",
    ]
    assert (len(failed.value.problems), failed.value.more) == (MAX_PROBLEMS, 5)


def test_a_gold_response_file_names_unknown_turns_with_its_bad_lines(collection, tmp_path):
    path = tmp_path / "gold.jsonl"
    lines = [
        {"turn_id": "1_1", "response": "fine", "nuggets": []},
        {"turn_id": "9_9", "response": "unknown turn", "nuggets": []},
        {"turn_id": "1_2", "nuggets": []},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        gold_responses_import(path=path, collection=collection, judge=JudgeFactory())

    assert problems_of(failed, path) == [
        "2: turn 9_9 is not in collection once",
        "3: turn 1_2: no 'response' text",
    ]
    assert not GoldResponse.objects.exists()


def test_cone_rag_gold_responses_name_an_empty_nugget_text_instead_of_failing_while_writing(
    collection, tmp_path
):
    path = tmp_path / "gold.json"
    data = {"1_1": {"manual": {"response": "r", "nuggets": {"matched": ["a fact", ""], "not-matched": []}}}}
    path.write_text(json.dumps(data), encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        gold_responses_import(path=path, collection=collection, judge=JudgeFactory(), fmt="cone-rag")

    assert problems_of(failed, path) == ["1: turn 1_1: nugget '': a nugget needs text"]
    assert not Nugget.objects.exists()
    assert not GoldResponse.objects.exists()


def test_the_problems_shown_are_the_first_of_the_file_whichever_check_found_them(collection, tmp_path):
    path = tmp_path / "bad.qrels"
    path.write_text(
        "9_9 0 doc:0 2\n" + "".join(f"1_1 0 doc:{i} NONE\n" for i in range(1, MAX_PROBLEMS + 11)),
        encoding="utf-8",
    )

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert (
        failed.value.problems[0] == f"{path}:1: turn 9_9 is not in collection once (import its topics first)"
    )
    assert failed.value.problems[-1] == f"{path}:{MAX_PROBLEMS}: grade 'NONE' is not an integer"
    assert failed.value.more == 11
