"""Gold nugget and gold response imports and exports: round trips, de-duplication links, all-or-nothing."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.collection.io import passages_import
from annotation.models import GoldResponse, Judge, Nugget, NuggetSetTurn
from annotation.nuggets.io import (
    gold_responses_export,
    gold_responses_import,
    nuggets_export,
    nuggets_import,
)
from tests.factories import AssessorJudgeFactory, CollectionFactory, JudgeFactory, TopicFactory, TurnFactory

pytestmark = pytest.mark.django_db

TURNS = ["8_5", "6_14", "4_3", "0_4"]


@pytest.fixture
def collection(fixtures_dir):
    collection = CollectionFactory()
    for turn_id in TURNS:
        number, position = turn_id.split("_")
        topic = TopicFactory(collection=collection, number=number)
        TurnFactory(topic=topic, turn_id=turn_id, position=int(position))
    passages_import(path=fixtures_dir / "nuggets" / "passages.jsonl", collection=collection)
    return collection


def export(tmp_path, *args) -> bytes:
    out = tmp_path / "out"
    call_command(*args, "--output", str(out))
    return out.read_bytes()


def test_it_round_trips_cone_rag_nuggets_byte_for_byte(collection, fixtures_dir, tmp_path):
    source = fixtures_dir / "nuggets" / "gold_nuggets.cone-rag.json"
    call_command(
        "import_nuggets",
        str(source),
        "--collection",
        collection.name,
        "--judge",
        "human",
        "--format",
        "cone-rag",
    )

    exported = export(
        tmp_path,
        "export_nuggets",
        "--collection",
        collection.name,
        "--judge",
        "human",
        "--format",
        "cone-rag",
    )

    assert exported == source.read_bytes()
    judge = Judge.objects.get(name="human")
    texts = list(Nugget.objects.filter(judge=judge, turn__turn_id="6_14").values_list("text", flat=True))
    assert texts == [
        "UVB rays burn the outer layer of the skin.",
        " UVA reaches deeper layers and ages the skin \u3010study\u3011 ",
    ]
    # the turn with no nugget is kept, in file order
    order = list(NuggetSetTurn.objects.filter(judge=judge).values_list("turn__turn_id", flat=True))
    assert order == TURNS


def test_it_round_trips_our_jsonl_byte_for_byte(collection, fixtures_dir, tmp_path):
    source = fixtures_dir / "nuggets" / "gold_nuggets.jsonl"
    call_command("import_nuggets", str(source), "--collection", collection.name, "--judge", "assessor-a")

    exported = export(tmp_path, "export_nuggets", "--collection", collection.name, "--judge", "assessor-a")

    assert exported == source.read_bytes()
    duplicate = Nugget.objects.get(judge__name="assessor-a", turn__turn_id="8_5", key="[3]")
    assert duplicate.duplicate_of.key == "[1]"
    emoji = Nugget.objects.get(judge__name="assessor-a", turn__turn_id="6_14", key="[1]")
    assert emoji.start == 83 and emoji.end == 119 and emoji.text.endswith("\U0001f31e")


def test_it_exports_the_deduplicated_set_without_duplicates(collection, fixtures_dir):
    nuggets_import(
        path=fixtures_dir / "nuggets" / "gold_nuggets.jsonl", collection=collection, judge=JudgeFactory()
    )
    judge = Judge.objects.get(nuggets__key="[3]", nuggets__turn__turn_id="8_5")

    lines = [
        json.loads(line)
        for line in nuggets_export(collection=collection, judge=judge, dedup=True).splitlines()
    ]

    assert [(row["turn_id"], row["nugget_id"]) for row in lines] == [
        ("8_5", "[1]"),
        ("8_5", "[2]"),
        ("6_14", "[1]"),
        ("6_14", "[2]"),
    ]


def test_it_links_a_deduplicated_set_to_its_originals_by_turn_and_key(collection, fixtures_dir, tmp_path):
    folder = fixtures_dir / "nuggets"
    call_command(
        "import_nuggets",
        str(folder / "gold_nuggets.cone-rag.json"),
        "--collection",
        collection.name,
        "--judge",
        "human",
        "--format",
        "cone-rag",
    )
    call_command(
        "import_nuggets",
        str(folder / "gold_nuggets_deduplicated.cone-rag.json"),
        "--collection",
        collection.name,
        "--judge",
        "human-dedup",
        "--format",
        "cone-rag",
        "--dedup-of",
        "human",
    )

    kept = Nugget.objects.filter(judge__name="human-dedup").select_related("original", "turn")
    assert kept.count() == 6
    for nugget in kept:
        assert nugget.original.judge.name == "human"
        assert (nugget.original.turn_id, nugget.original.key, nugget.original.text) == (
            nugget.turn_id,
            nugget.key,
            nugget.text,
        )
    exported = export(
        tmp_path,
        "export_nuggets",
        "--collection",
        collection.name,
        "--judge",
        "human-dedup",
        "--format",
        "cone-rag",
    )
    assert exported == (folder / "gold_nuggets_deduplicated.cone-rag.json").read_bytes()


def test_it_rejects_a_deduplicated_key_missing_from_the_original(collection, tmp_path):
    original = JudgeFactory()
    (tmp_path / "dedup.json").write_text(
        '{\n    "8_5": {\n        "[7]": {"text": "x", "relevance": "1"}\n    }\n}'
    )

    with pytest.raises(CommandError, match=r"dedup.json:3: nugget \[7\] of turn 8_5 is not in"):
        call_command(
            "import_nuggets",
            str(tmp_path / "dedup.json"),
            "--collection",
            collection.name,
            "--judge",
            "d",
            "--format",
            "cone-rag",
            "--dedup-of",
            original.name,
        )
    assert not Nugget.objects.exists()


def test_it_imports_the_same_file_twice_without_changes(collection, fixtures_dir):
    judge = JudgeFactory()
    path = fixtures_dir / "nuggets" / "gold_nuggets.cone-rag.json"
    first = nuggets_import(path=path, collection=collection, judge=judge, fmt="cone-rag")
    before = list(Nugget.objects.order_by("id").values_list("id", "key", "text", "updated_at"))

    second = nuggets_import(path=path, collection=collection, judge=judge, fmt="cone-rag")

    assert (first.created, second.created, second.updated, second.deleted, second.unchanged) == (
        7,
        0,
        0,
        0,
        7,
    )
    assert list(Nugget.objects.order_by("id").values_list("id", "key", "text", "updated_at")) == before


def test_it_rejects_a_whole_file_with_a_span_that_does_not_match_its_passage(
    collection, fixtures_dir, tmp_path
):
    lines = (fixtures_dir / "nuggets" / "gold_nuggets.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["start"] += 1
    lines[1] = json.dumps(row)
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")

    with pytest.raises(
        CommandError,
        match=r"bad.jsonl:2: nugget \[2\]: the text is not passage clueweb22-en0001-00-00001:0 at 107-144",
    ):
        call_command(
            "import_nuggets", str(tmp_path / "bad.jsonl"), "--collection", collection.name, "--judge", "x"
        )
    assert not Nugget.objects.exists()
    assert not Judge.objects.filter(name="x").exists()


def test_it_rejects_turns_not_in_the_collection_and_bad_shapes_with_their_lines(collection, tmp_path):
    (tmp_path / "bad.json").write_text(
        '{\n    "99_1": {},\n    "8_5": {\n        "[1]": {"relevance": "2"}\n    }\n}'
    )

    with pytest.raises(CommandError) as failure:
        call_command(
            "import_nuggets",
            str(tmp_path / "bad.json"),
            "--collection",
            collection.name,
            "--judge",
            "x",
            "--format",
            "cone-rag",
        )
    assert "bad.json:4: turn 8_5 nugget [1]: expected" in str(failure.value)
    assert not Nugget.objects.exists()


def test_it_refuses_to_import_over_an_assessors_own_nuggets(collection, fixtures_dir):
    assessor = AssessorJudgeFactory()
    with pytest.raises(CommandError, match="is an assessor"):
        call_command(
            "import_nuggets",
            str(fixtures_dir / "nuggets" / "gold_nuggets.jsonl"),
            "--collection",
            collection.name,
            "--judge",
            assessor.name,
        )


def test_it_round_trips_cone_rag_gold_responses_byte_for_byte(collection, fixtures_dir, tmp_path):
    source = fixtures_dir / "nuggets" / "gold_responses.cone-rag.json"
    call_command(
        "import_gold_responses",
        str(source),
        "--collection",
        collection.name,
        "--judge",
        "nist",
        "--format",
        "cone-rag",
    )
    call_command(
        "import_gold_responses",
        str(source),
        "--collection",
        collection.name,
        "--judge",
        "nist",
        "--format",
        "cone-rag",
    )

    exported = export(
        tmp_path,
        "export_gold_responses",
        "--collection",
        collection.name,
        "--judge",
        "nist",
        "--format",
        "cone-rag",
    )

    assert exported == source.read_bytes()
    response = GoldResponse.objects.get(judge__name="nist", turn__turn_id="6_14")
    assert sorted(response.nuggets.values_list("text", flat=True)) == [
        "UVA ages the skin",
        "UVB burns \u2013 the outer layer",
    ]
    assert GoldResponse.objects.count() == 3


def test_it_round_trips_jsonl_gold_responses_naming_nuggets_by_key(collection, fixtures_dir, tmp_path):
    nugget_judge = JudgeFactory(name="human")
    nuggets_import(
        path=fixtures_dir / "nuggets" / "gold_nuggets.cone-rag.json",
        collection=collection,
        judge=nugget_judge,
        fmt="cone-rag",
    )
    source = tmp_path / "gold.jsonl"
    source.write_text(
        '{"turn_id": "6_14", "response": " UVA ages, UVB burns. ", "nuggets": ["[1]", "[2]"], "draft": false}\n'
        '{"turn_id": "8_5", "response": "Fat tyres float \u2013 on snow.", "nuggets": ["[4]"], "draft": true}\n'
    )
    writer = JudgeFactory()

    gold_responses_import(path=source, collection=collection, judge=writer, nugget_judge=nugget_judge)

    exported = gold_responses_export(collection=collection, judge=writer, nugget_judge=nugget_judge)
    assert exported.encode() == source.read_bytes()
    assert GoldResponse.objects.get(judge=writer, turn__turn_id="8_5").is_draft is True


def test_it_rejects_gold_responses_naming_unknown_nuggets(collection, tmp_path):
    (tmp_path / "gold.jsonl").write_text('{"turn_id": "6_14", "response": "r", "nuggets": ["[9]"]}\n')
    with pytest.raises(CommandError, match=r"gold.jsonl:1: turn 6_14: no nugget \[9\]"):
        call_command(
            "import_gold_responses",
            str(tmp_path / "gold.jsonl"),
            "--collection",
            collection.name,
            "--judge",
            "w",
        )
    assert not GoldResponse.objects.exists()
