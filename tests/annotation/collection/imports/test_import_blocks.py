"""Imports written a block at a time: the answers' responses and sentences in bulk, the passages beside
another collection's passages of the same ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.collection import io
from annotation.collection.io import passages_import, run_import
from annotation.models import Collection, Passage, Response, Turn
from annotation.services import collection_get_or_create

pytestmark = pytest.mark.django_db


def write(tmp_path: Path, name: str, lines: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def passages(collection: Collection) -> dict[str, tuple[str, str]]:
    return {p.passage_id: (p.title, p.text) for p in Passage.objects.filter(collection=collection)}


def test_a_second_collection_imports_passages_of_the_same_ids_as_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(io, "BATCH", 2)  # several batches, each meeting the other collection's rows
    first, second = collection_get_or_create(name="first"), collection_get_or_create(name="second")
    ours = [{"id": f"d{i}", "title": "t", "text": f"first {i}"} for i in range(5)]
    passages_import(path=write(tmp_path, "a.jsonl", ours), collection=first)
    theirs = [{"id": f"d{i}", "title": "u", "text": f"second {i}"} for i in range(3, 9)]
    result = passages_import(path=write(tmp_path, "b.jsonl", theirs), collection=second)
    assert (result.created, result.updated) == (6, 0)
    assert passages(second) == {f"d{i}": ("u", f"second {i}") for i in range(3, 9)}
    assert passages(first) == {f"d{i}": ("t", f"first {i}") for i in range(5)}

    # Again with one changed, one new and the rest unchanged: only the second collection moves.
    theirs[1]["text"] = "changed"
    theirs.append({"id": "d0", "title": "u", "text": "second 0"})
    result = passages_import(path=write(tmp_path, "b.jsonl", theirs), collection=second)
    assert (result.created, result.updated, result.unchanged) == (1, 1, 5)
    assert passages(second)["d4"] == ("u", "changed")
    assert passages(second)["d0"] == ("u", "second 0")
    assert passages(first) == {f"d{i}": ("t", f"first {i}") for i in range(5)}


def answer(topic: int, text: str, length: int = 20) -> dict:
    return {
        "run_id": "rag-a",
        "topic_id": f"2024-{topic}",
        "topic": f"question {topic}",
        "references": [f"doc_{topic}#0", f"doc_{topic}#1"],
        "response_length": length,
        "answer": [
            {"text": f"{text} one.", "citations": [1]},
            {"text": f"{text} two.", "citations": [0, 1]},
            {"text": "Ask.", "citations": []},
        ],
    }


def rows(collection: Collection) -> list[tuple]:
    """The collection's responses and their sentences, in the order they were written (their ids)."""
    return [
        (
            r.turn.turn_id,
            r.rank,
            r.text,
            r.references,
            r.response_length,
            [(s.index, s.text, s.citations) for s in r.sentences.order_by("index")],
        )
        for r in Response.objects.filter(run__collection=collection).select_related("turn").order_by("id")
    ]


def test_the_answers_block_import_writes_the_rows_one_at_a_time_wrote(tmp_path, monkeypatch):
    """A block of one is the former import, a response and its sentences at a time; blocks of three split
    the file's seven answers unevenly. Both write the same rows, first import and re-import alike."""
    single, blocks = collection_get_or_create(name="single"), collection_get_or_create(name="blocks")
    answers = [answer(topic, f"Answer {topic}") for topic in range(7)]
    path = write(tmp_path, "a.jsonl", answers)
    results = {}
    for collection, block in ((single, 1), (blocks, 3)):
        monkeypatch.setattr(io, "RESPONSE_BLOCK", block)
        [(_, results[block])] = run_import(path=path, collection=collection)
    assert (results[1].created, results[3].created) == (14, 14)  # 7 topics and 7 responses each
    assert rows(blocks) == rows(single)
    assert len(rows(blocks)) == 7
    assert Turn.objects.filter(collection=blocks).count() == 7

    kept = {
        c.name: Response.objects.get(run__collection=c, turn__turn_id="2024-1").pk for c in (single, blocks)
    }
    gone = {
        c.name: Response.objects.get(run__collection=c, turn__turn_id="2024-2").pk for c in (single, blocks)
    }
    answers[1]["response_length"] = 99  # the length alone: updated in place
    answers[2] = answer(2, "Rewritten")  # new sentences: the response replaced
    answers.append(answer(7, "Answer 7"))
    path = write(tmp_path, "a.jsonl", answers)
    for collection, block in ((single, 1), (blocks, 3)):
        monkeypatch.setattr(io, "RESPONSE_BLOCK", block)
        [(_, results[block])] = run_import(path=path, collection=collection)
        assert (results[block].created, results[block].updated, results[block].unchanged) == (2, 2, 5)
        assert Response.objects.get(pk=kept[collection.name]).response_length == 99
        assert not Response.objects.filter(pk=gone[collection.name]).exists()
    assert rows(blocks) == rows(single)
    # The replacement is written after the rows it did not replace, as it was one at a time.
    assert rows(blocks)[-2][0] == "2024-2"
    assert rows(blocks)[-2][5][0] == (0, "Rewritten one.", ["doc_2#1"])

    # A third time, nothing changes.
    before = rows(blocks)
    [(_, result)] = run_import(path=path, collection=blocks)
    assert (result.created, result.updated) == (0, 0)
    assert rows(blocks) == before
