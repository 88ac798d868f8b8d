"""Run, passage and PTKB qrels imports stream: their memory does not grow with the file, and they stay all or
nothing, idempotent and exact about file:line, the checks that need the whole file made on rows staged in
the database (the qrels import's own are pinned in test_qrels_streaming.py)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from annotation.collection import rankings
from annotation.collection.io import passages_import, run_import
from annotation.formats.base import MAX_PROBLEMS, ImportFailed
from annotation.models import Passage, PtkbJudgment, Ranking, Run
from annotation.ptkb.io import ptkb_qrels_import
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    PassageFactory,
    PtkbStatementFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    """200 turns in 20 conversations of 10, each conversation with PTKB statements 1-50."""
    collection = CollectionFactory(name="stream")
    for number in range(20):
        topic = TopicFactory(collection=collection, number=str(number))
        for position in range(1, 11):
            TurnFactory(topic=topic, turn_id=f"{number}_{position}", position=position)
        for statement in range(1, 51):
            PtkbStatementFactory(topic=topic, statement_id=str(statement))
    return collection


@pytest.fixture(autouse=True)
def _small_limit(settings):
    # Well above the files below; a read of the whole file would allocate the limit up front.
    settings.IMPORT_MAX_BYTES = 8 * 1024**2


def _peak_bytes(action) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _run_file(path, turns: int, depth: int = 200, *, last: str = "") -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for t in range(turns):
            for rank in range(1, depth + 1):
                handle.write(
                    f"{t // 10}_{t % 10 + 1} Q0 clueweb22-en0000-00-{t:05d}-{rank:05d}:1 {rank} {-rank} bm25\n"
                )
        handle.write(last)


def test_it_imports_a_trec_run_in_memory_that_does_not_grow_with_the_file(collection, tmp_path, monkeypatch):
    monkeypatch.setattr(rankings, "RANKING_CHUNK", 10)  # a chunk of rankings is the one thing held
    warm, small, large = tmp_path / "warm.run", tmp_path / "small.run", tmp_path / "large.run"
    _run_file(warm, 10, 10)
    _run_file(small, 100)  # 20,000 lines: past the first batches of staged rows
    _run_file(large, 200, 400)
    _peak_bytes(lambda: run_import(path=warm, collection=collection, name="warm"))

    peaks = [
        _peak_bytes(lambda: run_import(path=small, collection=collection, name="small")),
        _peak_bytes(lambda: run_import(path=large, collection=collection, name="large")),
    ]

    assert Ranking.objects.filter(run__name="large").count() == 200
    # Holding the file, its lines or a record per line would make the larger file's peak about 4 times
    # the smaller's; streamed, both hold a batch or two of staged rows.
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_a_run_problem_after_the_first_batches_leaves_nothing_written(collection, tmp_path):
    path = tmp_path / "late.run"
    _run_file(path, 60, last="0_1 Q0 doc:x 1 NaN bm25\n")

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert failed.value.problems == [f"{path}:12001: score 'NaN' is not a finite number"]
    assert not Run.objects.exists()
    assert not Ranking.objects.exists()


def test_it_names_documents_ranked_twice_and_unknown_turns_in_line_order(collection, tmp_path):
    path = tmp_path / "twice.run"
    lines = ["9_99 Q0 doc:a 1 1 r", "9_99 Q0 doc:a 2 1 r"]  # an unknown turn: its pairs are still checked
    lines += [f"0_1 Q0 doc:{i} {i + 1} 1 r" for i in range(MAX_PROBLEMS + 5)]
    lines += [f"0_1 Q0 doc:{i} {i + 1} 1 r" for i in range(MAX_PROBLEMS + 5)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert failed.value.problems[:3] == [
        f"{path}:1: turn 9_99 is not in collection stream (import its topics first)",
        f"{path}:2: document doc:a ranked twice for 9_99",
        f"{path}:{3 + MAX_PROBLEMS + 5}: document doc:0 ranked twice for 0_1",
    ]
    assert len(failed.value.problems) == MAX_PROBLEMS
    assert failed.value.more == 2 + (MAX_PROBLEMS + 5) - MAX_PROBLEMS
    assert not Run.objects.exists()


@pytest.mark.parametrize("group", [10_000, 2])
def test_it_finds_a_document_ranked_twice_where_the_file_names_its_turn_again(
    collection, tmp_path, monkeypatch, group
):
    monkeypatch.setattr(rankings, "_GROUP", group)  # the lines of a turn staged in groups of 2 too
    path = tmp_path / "apart.run"
    path.write_text(
        "0_1 Q0 a 1 3 r\n0_1 Q0 b 2 2 r\n0_1 Q0 c 3 1 r\n0_2 Q0 a 1 1 r\n0_1 Q0 b 4 0 r\n", encoding="utf-8"
    )

    with pytest.raises(ImportFailed) as failed:
        run_import(path=path, collection=collection)

    assert failed.value.problems == [f"{path}:5: document b ranked twice for 0_1"]
    assert not Ranking.objects.exists()


def test_it_ranks_each_turn_by_rank_then_score_then_id_in_the_order_the_file_names_turns(
    collection, tmp_path
):
    path = tmp_path / "order.run"
    path.write_text(
        "0_2 Q0 b 2 5 r\n0_1 Q0 z 1 1 r\n0_2 Q0 c 1 3 r\n0_2 Q0 a 2 5 r\n0_2 Q0 d 2 7 r\n0_1 Q0 y 1 1 r\n",
        encoding="utf-8",
    )

    [(run, result)] = run_import(path=path, collection=collection)
    again = run_import(path=path, collection=collection)

    assert (run.name, result.created, again[0][1].unchanged) == ("r", 2, 2)
    stored = list(
        Ranking.objects.filter(run=run).order_by("id").values_list("turn__turn_id", "passage_ids", "scores")
    )
    assert stored == [("0_2", ["c", "d", "a", "b"], [3.0, 7.0, 5.0, 5.0]), ("0_1", ["y", "z"], [1.0, 1.0])]


def _passages_file(path, count: int, *, start: int = 0, last: str = "") -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(start, start + count):
            handle.write(
                json.dumps({"id": f"doc{i:07d}:1", "title": "t", "text": f"passage {i} " * 8}) + "\n"
            )
        handle.write(last)


def test_it_imports_passages_in_memory_that_does_not_grow_with_the_file(collection, tmp_path):
    warm, small, large = tmp_path / "warm.jsonl", tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _passages_file(warm, 10)
    _passages_file(small, 10_000, start=100)
    _passages_file(large, 40_000, start=100)
    _peak_bytes(lambda: passages_import(path=warm, collection=collection))

    # The larger file holds the smaller one's passages too: comparing them with the stored ones happens
    # in the database, not in memory.
    peaks = [
        _peak_bytes(lambda: passages_import(path=small, collection=collection)),
        _peak_bytes(lambda: passages_import(path=large, collection=collection)),
    ]

    assert Passage.objects.filter(collection=collection).count() == 40_010
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_a_passage_import_counts_updates_and_is_idempotent(collection, tmp_path):
    PassageFactory(collection=collection, passage_id="kept", title="", text="same")
    PassageFactory(collection=collection, passage_id="changed", title="", text="old")
    path = tmp_path / "p.jsonl"
    rows = [{"id": "kept", "text": "same"}, {"id": "changed", "text": "new"}, {"id": "added", "text": "x"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    first = passages_import(path=path, collection=collection)
    again = passages_import(path=path, collection=collection)

    assert (first.created, first.updated, first.unchanged) == (1, 1, 1)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 3)
    stored = dict(Passage.objects.filter(collection=collection).values_list("passage_id", "text"))
    assert stored == {"kept": "same", "changed": "new", "added": "x"}


def test_passages_given_twice_are_named_in_line_order_and_nothing_is_written(collection, tmp_path):
    path = tmp_path / "twice.jsonl"
    _passages_file(path, MAX_PROBLEMS + 5, last="")
    with open(path, "a", encoding="utf-8") as handle:
        for i in range(MAX_PROBLEMS + 5):
            handle.write(json.dumps({"id": f"doc{i:07d}:1", "text": "again"}) + "\n")

    with pytest.raises(ImportFailed) as failed:
        passages_import(path=path, collection=collection)

    assert (
        failed.value.problems[0]
        == f"{path}:{MAX_PROBLEMS + 6}: passage doc0000000:1 appears twice (first on line 1)"
    )
    assert len(failed.value.problems) == MAX_PROBLEMS
    assert failed.value.more == 5
    assert not Passage.objects.exists()


def _ptkb_file(path, padding: int) -> None:
    # Every (turn, statement) pair of the collection once; trailing spaces make the file larger, not its labels.
    with open(path, "w", encoding="utf-8") as handle:
        for number in range(20):
            for position in range(1, 11):
                for statement in range(1, 51):
                    handle.write(f"{number}_{position} 0 {statement} {statement % 2}{' ' * padding}\n")


def test_it_imports_ptkb_qrels_in_memory_bounded_by_the_collection_not_the_file(
    collection, tmp_path, settings
):
    settings.IMPORT_MAX_BYTES = 32 * 1024**2
    small, large = tmp_path / "small.ptkb", tmp_path / "large.ptkb"
    _ptkb_file(small, 20)
    _ptkb_file(large, 2400)
    _peak_bytes(lambda: ptkb_qrels_import(path=small, collection=collection, judge=JudgeFactory(name="warm")))

    peaks = [
        _peak_bytes(lambda: ptkb_qrels_import(path=small, collection=collection, judge=JudgeFactory())),
        _peak_bytes(lambda: ptkb_qrels_import(path=large, collection=collection, judge=JudgeFactory())),
    ]

    assert PtkbJudgment.objects.count() == 3 * 10_000
    # The larger file (24 MB) is about 80 times the smaller: read whole, it alone would be several times
    # the smaller import's peak.
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_a_ptkb_pair_labelled_twice_is_named_whether_or_not_the_collection_knows_it(collection, tmp_path):
    path = tmp_path / "twice.ptkb"
    path.write_text("0_1 0 1 1\n9_99 0 1 1\n0_1 0 1 0\n9_99 0 1 0\n0_1 0 77 1\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        ptkb_qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert failed.value.problems == [
        f"{path}:2: turn 9_99 is not in collection stream",
        f"{path}:3: 0_1 1 is labelled twice (first on line 1)",
        f"{path}:4: 9_99 1 is labelled twice (first on line 2)",
        f"{path}:5: conversation of turn 0_1 has no PTKB statement 77",
    ]
    assert not PtkbJudgment.objects.exists()
