"""Hostile import files end in file:line problems, the same on SQLite and PostgreSQL, never a traceback.

Each case is refused at parse time, before anything is written, so both databases refuse the same inputs
(SQLite would store a NUL or a 50 MB id that PostgreSQL rejects at insert time), and error messages quote
only a short excerpt of the bad value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.formats import base
from annotation.formats.base import ImportFailed
from annotation.models import (
    Judge,
    Nugget,
    Passage,
    PtkbStatement,
    Ranking,
    RelevanceJudgment,
    Run,
    SupportJudgment,
    Topic,
    Turn,
)
from annotation.relevance.io import qrels_import
from annotation.services import collection_get_or_create
from tests.factories import AssessorJudgeFactory, JudgeFactory, UserFactory

pytestmark = pytest.mark.django_db

TOPICS = [{"number": "1", "title": "Diet", "turns": [{"turn_id": 1, "utterance": "Find me a diet."}]}]
HUGE = "x" * 5_000_000


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def stored() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (Topic, Turn, PtkbStatement, Passage, Run, Ranking, RelevanceJudgment, Nugget)
    )


@pytest.fixture
def collection(tmp_path):
    collection = collection_get_or_create(name="limits")
    topics_import(path=write(tmp_path, "topics.json", json.dumps(TOPICS)), collection=collection)
    return collection


def refused(action, path: Path) -> str:
    """The problems an import raised; it must have written nothing."""
    before = stored()
    with pytest.raises(ImportFailed) as excinfo:
        action(path=path)
    assert stored() == before
    return str(excinfo.value)


def test_the_id_limits_are_the_columns_the_ids_are_stored_in():
    fields = {
        base.MAX_TOPIC_NUMBER: Topic._meta.get_field("number"),
        base.MAX_TURN_ID: Turn._meta.get_field("turn_id"),
        base.MAX_STATEMENT_ID: PtkbStatement._meta.get_field("statement_id"),
        base.MAX_PASSAGE_ID: Passage._meta.get_field("passage_id"),
        base.MAX_RUN_NAME: Run._meta.get_field("name"),
        base.MAX_JUDGE_NAME: Judge._meta.get_field("name"),
        base.MAX_NUGGET_KEY: Nugget._meta.get_field("key"),
        base.MAX_NUGGET_RELEVANCE: Nugget._meta.get_field("relevance"),
    }
    assert {limit: field.max_length for limit, field in fields.items()} == {limit: limit for limit in fields}
    assert RelevanceJudgment._meta.get_field("passage_id").max_length == base.MAX_PASSAGE_ID
    assert SupportJudgment._meta.get_field("passage_id").max_length == base.MAX_PASSAGE_ID


# --- Names and ids that would break pages --------------------------------------------------------------


@pytest.mark.parametrize(
    ("turn_id", "message"),
    [
        ("a/b", "t.json:1: turn id '1_a/b' contains '/'"),
        ("a\u0007b", "t.json:1: turn id '1_a\\x07b' contains the control character U+0007"),
        (
            "x" * 70,
            "t.json:1: turn id '1_xxxxxxxxxxxxxxxxxx'... (72 characters) is longer than 64 characters",
        ),
    ],
)
def test_it_refuses_turn_ids_pages_cannot_address(tmp_path, turn_id, message):
    collection = collection_get_or_create(name="ids")
    topics = [{"number": "1", "turns": [{"turn_id": turn_id, "utterance": "u"}]}]
    problems = refused(
        lambda path: topics_import(path=path, collection=collection),
        write(tmp_path, "t.json", json.dumps(topics)),
    )
    assert message in problems


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1/2\tquery\n", "t.tsv:1: topic id '1/2' contains '/'"),
        ("..\tquery\n", "t.tsv:1: topic id '..' is not a name"),
    ],
)
def test_it_refuses_bad_topic_ids_in_tab_separated_topics(tmp_path, content, message):
    collection = collection_get_or_create(name="ids")
    problems = refused(
        lambda path: topics_import(path=path, collection=collection), write(tmp_path, "t.tsv", content)
    )
    assert message in problems


def test_it_refuses_a_passage_id_with_a_slash_or_longer_than_its_column(collection, tmp_path):
    lines = [{"id": "ok", "text": "fine"}, {"id": "d/1", "text": "t"}, {"id": "p" * 300, "text": "t"}]
    problems = refused(
        lambda path: passages_import(path=path, collection=collection),
        write(tmp_path, "p.jsonl", "\n".join(json.dumps(x) for x in lines)),
    )
    assert "p.jsonl:2: passage id 'd/1' contains '/'" in problems
    assert "p.jsonl:3: passage id 'pppppppppppppppppppp'... (300 characters) is longer than 255" in problems


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        ("1_1 Q0 d1 1 1.0 a/b\n", None, "run.txt:1: run name 'a/b' contains '/'"),
        ("1_1 Q0 d1 1 1.0 bm25\n", "=cmd|x/y", "run name '=cmd|x/y' contains '/'"),
        (
            "1_1 Q0 d1 1 1.0 bm25\n",
            "tab\there",
            "run name 'tab\\there' contains the control character U+0009",
        ),
    ],
)
def test_it_refuses_bad_run_names(collection, tmp_path, content, name, message):
    problems = refused(
        lambda path: run_import(path=path, collection=collection, name=name),
        write(tmp_path, "run.txt", content),
    )
    assert message in problems


def test_it_refuses_a_bad_run_name_in_an_ikat_json_run(collection, tmp_path):
    run = {"run_name": "x" * 201, "turns": [{"turn_id": "1_1", "responses": []}]}
    problems = refused(
        lambda path: run_import(path=path, collection=collection),
        write(tmp_path, "run.json", json.dumps(run)),
    )
    assert "run.json:1: run name 'xxxxxxxxxxxxxxxxxxxx'... (201 characters) is longer than 200" in problems


@pytest.mark.parametrize(
    "name", ["a/b", "x" * 201, "bell\u0007", "assessor:nobody", "=cmd", "+1", "-x", "@x", "crowd-majority"]
)
def test_import_commands_refuse_bad_judge_names(collection, tmp_path, name):
    path = write(tmp_path, "q.txt", "1_1 0 d1 2\n")
    with pytest.raises(CommandError, match="judge name|kept for"):
        # As `--judge=-x`: spelt `--judge -x`, argparse would read -x as an option of its own.
        call_command("import_qrels", str(path), f"--judge={name}", collection=collection.name)
    assert not Judge.objects.filter(name=name).exists()
    assert RelevanceJudgment.objects.count() == 0


# --- Numbers that cannot be stored or ranked ----------------------------------------------------------


@pytest.mark.parametrize("score", ["nan", "inf", "-Infinity", "1e999"])
def test_it_refuses_a_trec_run_score_that_is_not_finite(collection, tmp_path, score):
    problems = refused(
        lambda path: run_import(path=path, collection=collection),
        write(tmp_path, "run.txt", f"1_1 Q0 d1 1 1.0 bm25\n1_1 Q0 d2 2 {score} bm25\n"),
    )
    assert f"run.txt:2: score '{score}' is not a finite number" in problems


@pytest.mark.parametrize(
    ("score", "message"),
    [
        ("NaN", "run.json:4: NaN is not a number"),
        ("Infinity", "run.json:4: Infinity is not a number"),
        ("-Infinity", "run.json:4: -Infinity is not a number"),
        ("1e999", "run.json:4: number '1e999' is out of range"),
        (
            "123456789012345678901234",
            "run.json:4: integer '12345678901234567890'... (24 characters) is out of range",
        ),
    ],
)
def test_it_refuses_numbers_json_cannot_store_with_their_line(collection, tmp_path, score, message):
    text = (
        '{"run_name": "r", "turns": [{"turn_id": "1_1", "responses": [{"rank": 1,\n'
        '"text": "answer",\n'
        '"passage_provenance": [{"id": "d1", "score": 1.0},\n'
        f'{{"id": "d2", "score": {score}}}]}}]}}]}}\n'
    )
    problems = refused(
        lambda path: run_import(path=path, collection=collection), write(tmp_path, "run.json", text)
    )
    assert message in problems


def test_it_refuses_nan_in_a_jsonl_line(collection, tmp_path):
    text = '{"id": "a", "text": "ok"}\n{"id": "b", "text": "t", "score": NaN}\n'
    problems = refused(
        lambda path: passages_import(path=path, collection=collection), write(tmp_path, "p.jsonl", text)
    )
    assert "p.jsonl:2: NaN is not a number" in problems


# --- Characters no database stores ---------------------------------------------------------------------


def test_it_refuses_a_raw_nul_byte_with_its_line(collection, tmp_path):
    problems = refused(
        lambda path: qrels_import(path=path, collection=collection, judge=JudgeFactory()),
        write(tmp_path, "q.txt", b"1_1 0 d1 2\n1_1 0 d\x002 1\n"),
    )
    assert "q.txt:2: a NUL character" in problems


def test_it_refuses_an_escaped_nul_in_json_but_not_an_escaped_backslash(collection, tmp_path):
    text = '{"id": "a", "text": "a \\\\u0000 is fine"}\n{"id": "b", "text": "a\\u0000b"}\n'
    problems = refused(
        lambda path: passages_import(path=path, collection=collection), write(tmp_path, "p.jsonl", text)
    )
    assert "p.jsonl:2: a NUL character (\\u0000)" in problems
    assert "p.jsonl:1" not in problems


def test_it_refuses_a_lone_surrogate_but_keeps_a_pair(collection, tmp_path):
    text = '{"id": "a", "text": "man \\ud83d\\udc68 ok"}\n{"id": "b", "text": "half \\ud83d only"}\n'
    problems = refused(
        lambda path: passages_import(path=path, collection=collection), write(tmp_path, "p.jsonl", text)
    )
    assert problems.endswith("p.jsonl:2: a lone surrogate (\\ud83d), which is not a character")

    passages_import(path=write(tmp_path, "ok.jsonl", text.split("\n")[0]), collection=collection)
    assert Passage.objects.get().text == "man \U0001f468 ok"


def test_a_line_separator_inside_a_string_does_not_split_a_jsonl_line(collection, tmp_path):
    text = json.dumps({"id": "a", "text": "one\u2028two"}, ensure_ascii=False) + "\n" + '{"id": "b"}\n'
    problems = refused(
        lambda path: passages_import(path=path, collection=collection), write(tmp_path, "p.jsonl", text)
    )
    assert problems.endswith("p.jsonl:2: passage b has no text ('passage_text', 'text' or 'contents')")


# --- Files too deep or too large ------------------------------------------------------------------------


def test_it_refuses_json_nested_too_deeply(collection, tmp_path):
    problems = refused(
        lambda path: topics_import(path=path, collection=collection),
        write(tmp_path, "t.json", "[" * 200_000 + "]" * 200_000),
    )
    assert problems.endswith("t.json: JSON nested too deeply to read")


def test_it_refuses_a_jsonl_line_nested_too_deeply_with_its_line(collection, tmp_path):
    text = '{"id": "a", "text": "ok"}\n{"id": "b", "text": "t", "x": ' + "[" * 200_000 + "]" * 200_000 + "}\n"
    problems = refused(
        lambda path: passages_import(path=path, collection=collection), write(tmp_path, "p.jsonl", text)
    )
    assert problems.endswith("p.jsonl:2: JSON nested too deeply to read")


def test_it_refuses_a_device_instead_of_reading_it_forever(collection):
    problems = refused(lambda path: passages_import(path=path, collection=collection), Path("/dev/zero"))
    assert problems == "/dev/zero: not a regular file"


@override_settings(IMPORT_MAX_BYTES=1000)
def test_it_refuses_a_file_larger_than_the_import_limit(collection, tmp_path):
    text = "\n".join(json.dumps({"id": f"p{i}", "text": "t" * 50}) for i in range(40))
    problems = refused(
        lambda path: passages_import(path=path, collection=collection), write(tmp_path, "p.jsonl", text)
    )
    assert (
        "p.jsonl: the file has 0 MB, more than the import limit of 0 MB (setting IMPORT_MAX_BYTES)"
        in problems
    )


@override_settings(IMPORT_MAX_BYTES=1000)
def test_it_stops_reading_a_pipe_at_the_import_limit(collection, tmp_path):
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as out:
            try:
                out.write(b"x" * 100_000)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    problems = refused(lambda path: passages_import(path=path, collection=collection), fifo)
    writer.join(timeout=5)
    assert problems.endswith("pipe: more than the import limit of 0 MB (setting IMPORT_MAX_BYTES)")


# --- Messages stay short --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("q.txt", f"1_1 0 d{HUGE} 2\n"),
        ("q.txt", f"1_1 0 d1 {HUGE}\n"),
        ("run.txt", f"1_1 Q0 d1 1 {HUGE} bm25\n"),
        ("run.txt", f"1_1 Q0 d1 {HUGE} 1.0 bm25\n"),
        ("p.jsonl", json.dumps({"id": HUGE, "text": "t"})),
    ],
)
def test_a_huge_bad_value_is_quoted_as_a_short_excerpt(collection, tmp_path, name, content):
    judge = JudgeFactory()
    importers = {
        "q.txt": lambda path: qrels_import(path=path, collection=collection, judge=judge),
        "run.txt": lambda path: run_import(path=path, collection=collection),
        "p.jsonl": lambda path: passages_import(path=path, collection=collection),
    }
    problems = refused(importers[name], write(tmp_path, name, content))
    assert f"{name}:1: " in problems
    assert "(5000001 characters)" in problems or "(5000000 characters)" in problems
    assert len(problems) < len(str(tmp_path)) + 200


# --- Imports never write into people's labels ------------------------------------------------------------


def test_the_support_label_import_refuses_an_assessor_judge(collection, tmp_path):
    bob = AssessorJudgeFactory(user__username="bob")
    path = write(
        tmp_path,
        "s.jsonl",
        '{"run_id": "r", "topic_id": "1_1", "sentence_index": 0, "passage_id": "d1", "label": "FS"}\n',
    )

    with pytest.raises(CommandError, match="judge 'assessor:bob' is an assessor"):
        call_command("import_support_labels", str(path), collection=collection.name, judge=bob.name)

    assert SupportJudgment.objects.count() == 0


@pytest.mark.parametrize(
    ("command", "name", "content"),
    [
        ("import_qrels", "q.txt", "1_1 0 d1 2\n"),
        ("import_ptkb_qrels", "p.txt", "1_1 0 1 1\n"),
        ("import_nuggets", "n.jsonl", '{"turn_id": "1_1", "nugget_id": "[1]", "text": "t"}\n'),
        ("import_gold_responses", "g.jsonl", '{"turn_id": "1_1", "response": "r", "nuggets": []}\n'),
        ("import_support_labels", "s.jsonl", "{}\n"),
    ],
)
@pytest.mark.parametrize("kind", [Judge.Kind.ASSESSOR, Judge.Kind.CROWD])
def test_every_import_with_a_judge_refuses_an_assessor_or_crowd_judge(
    collection, tmp_path, command, name, content, kind
):
    judge = (
        AssessorJudgeFactory()
        if kind == Judge.Kind.ASSESSOR
        else JudgeFactory(kind=kind, name="mturk-majority")
    )
    before = stored()

    with pytest.raises(CommandError, match=f"judge '{judge.name}' is an? (assessor|crowd aggregate)"):
        call_command(
            command, str(write(tmp_path, name, content)), collection=collection.name, judge=judge.name
        )

    assert stored() == before


def test_import_ikat_refuses_an_assessor_as_the_qrels_judge(tmp_path):
    judge = AssessorJudgeFactory()
    with pytest.raises(CommandError, match="is an assessor"):
        call_command("import_ikat", year="2024", source=str(tmp_path), qrels_judge=judge.name)


def test_ids_the_rules_let_through_give_working_nugget_pages(client, tmp_path):
    collection = collection_get_or_create(name="odd")
    turn_ids = ["a b", "q?x", "h#1", "50%", "caf\u00e9", "x:y", "..."]
    topics = [{"number": "7", "turns": [{"turn_id": t, "utterance": "u"} for t in turn_ids]}]
    topics_import(path=write(tmp_path, "t.json", json.dumps(topics)), collection=collection)
    client.force_login(UserFactory())

    index = client.get(reverse("nuggets-turns", args=[collection.name]))
    pages = [client.get(reverse("nuggets-turn", args=[collection.name, f"7_{t}"])) for t in turn_ids]

    assert index.status_code == 200
    assert [p.status_code for p in pages] == [200] * len(turn_ids)
