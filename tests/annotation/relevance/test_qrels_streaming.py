"""A qrels import streams: its memory does not grow with the file, and it stays all or nothing, idempotent
and exact about file:line, its checks now made on the rows staged in the database."""

from __future__ import annotations

import tracemalloc

import pytest

from annotation.formats.base import MAX_PROBLEMS, ImportFailed
from annotation.models import RelevanceJudgment
from annotation.relevance.io import qrels_import
from tests.factories import CollectionFactory, JudgeFactory, PassageFactory, TopicFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    collection = CollectionFactory(name="stream")
    topic = TopicFactory(collection=collection, number="1")
    for position in (1, 2, 3):
        TurnFactory(topic=topic, turn_id=f"1_{position}", position=position)
    return collection


def _qrels(path, n: int, *, last: str = "") -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(f"1_{i % 3 + 1} 0 clueweb22-en0000-00-{i:08d}:{i % 30} {i % 5}\n")
        handle.write(last)


def _peak_bytes(path, collection) -> int:
    judge = JudgeFactory()
    tracemalloc.start()
    try:
        qrels_import(path=path, collection=collection, judge=judge)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_it_imports_qrels_in_memory_that_does_not_grow_with_the_file(collection, tmp_path, settings):
    # Well above the files below; a read of the whole file would allocate the limit up front.
    settings.IMPORT_MAX_BYTES = 4 * 1024**2
    warm, small, large = tmp_path / "warm.qrels", tmp_path / "small.qrels", tmp_path / "large.qrels"
    _qrels(warm, 10)
    _qrels(small, 10_000)
    _qrels(large, 40_000)
    _peak_bytes(
        warm, collection
    )  # what the first import loads once (modules, compiled queries) is not counted

    peaks = [_peak_bytes(small, collection), _peak_bytes(large, collection)]

    assert RelevanceJudgment.objects.count() == 50_010
    # Reading the whole file, its lines or a record per line would make the larger file's peak about 4
    # times the smaller's; streamed in batches, both hold one batch (about 2 MB).
    assert peaks[1] < 1.5 * peaks[0], peaks
    assert peaks[1] < 4 * 1024**2, peaks


def test_a_problem_after_the_first_batches_leaves_nothing_written(collection, tmp_path):
    path = tmp_path / "late.qrels"
    _qrels(path, 25_000, last="1_1 0 doc:x NONE\n")

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert failed.value.problems == [f"{path}:25001: grade 'NONE' is not an integer"]
    assert not RelevanceJudgment.objects.exists()


def test_it_names_pairs_judged_twice_in_line_order_and_counts_the_rest(collection, tmp_path):
    path = tmp_path / "twice.qrels"
    lines = ["9_9 0 doc:a 1", "9_9 0 doc:a 2"]  # a turn the collection lacks: its pair is still checked
    lines += [f"1_1 0 doc:{i} 1" for i in range(MAX_PROBLEMS + 5)]
    lines += [f"1_1 0 doc:{i} 2" for i in range(MAX_PROBLEMS + 5)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    first_again = 3 + MAX_PROBLEMS + 5
    assert failed.value.problems[:3] == [
        f"{path}:1: turn 9_9 is not in collection stream (import its topics first)",
        f"{path}:2: 9_9 doc:a is judged twice (first on line 1)",
        f"{path}:{first_again}: 1_1 doc:0 is judged twice (first on line 3)",
    ]
    assert len(failed.value.problems) == MAX_PROBLEMS
    assert failed.value.more == 2 + (MAX_PROBLEMS + 5) - MAX_PROBLEMS
    assert not RelevanceJudgment.objects.exists()


def test_with_required_passages_it_names_the_first_missing_ones_and_counts_the_rest(collection, tmp_path):
    PassageFactory(collection=collection, passage_id="doc:kept")
    path = tmp_path / "missing.qrels"
    lines = ["1_1 0 doc:kept 3"] + [f"1_2 0 doc:{i} 1" for i in range(MAX_PROBLEMS + 3)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory(), require_passages=True)

    assert failed.value.problems[0] == f"{path}:2: passage doc:0 is not in collection stream"
    assert len(failed.value.problems) == MAX_PROBLEMS
    assert failed.value.more == 3
    assert not RelevanceJudgment.objects.exists()


def test_a_streamed_import_counts_replaces_and_is_idempotent(collection, tmp_path):
    judge = JudgeFactory()
    first, second = tmp_path / "first.qrels", tmp_path / "second.qrels"
    first.write_text("1_1 0 a 1\n1_1 0 b 2\n1_2 0 c 3\n", encoding="utf-8")
    second.write_text("1_1 0 a 1\n1_1 0 b 4\n1_3 0 d 0\n", encoding="utf-8")

    created = qrels_import(path=first, collection=collection, judge=judge)
    again = qrels_import(path=first, collection=collection, judge=judge)
    written = dict(RelevanceJudgment.objects.filter(judge=judge).values_list("passage_id", "updated_at"))
    replaced = qrels_import(path=second, collection=collection, judge=judge, replace=True)

    assert _counts(created) == (3, 0, 0, 0)
    assert _counts(again) == (0, 0, 3, 0)
    assert _counts(replaced) == (1, 1, 1, 1)
    stored = RelevanceJudgment.objects.filter(judge=judge).values_list("turn__turn_id", "passage_id", "grade")
    assert sorted(stored) == [("1_1", "a", 1), ("1_1", "b", 4), ("1_3", "d", 0)]
    # A revised grade says when it was revised; one the file repeats is left as it was.
    now = dict(RelevanceJudgment.objects.filter(judge=judge).values_list("passage_id", "updated_at"))
    assert (now["a"], now["b"] > written["b"]) == (written["a"], True)


def _counts(result) -> tuple[int, int, int, int]:
    return (result.created, result.updated, result.unchanged, result.deleted)


def test_it_refuses_a_line_longer_than_any_qrels_line_without_reading_it_whole(collection, tmp_path):
    from annotation.formats.base import MAX_LINE_BYTES

    path = tmp_path / "endless.qrels"
    path.write_bytes(b"1_1 0 a 1\n" + b"x" * (MAX_LINE_BYTES + 10))

    with pytest.raises(ImportFailed) as failed:
        qrels_import(path=path, collection=collection, judge=JudgeFactory())

    assert failed.value.problems == [f"{path}:2: a line longer than 16 MB"]
    assert not RelevanceJudgment.objects.exists()
