"""Plain and adaptive (iKAT 2024) relevance pooling."""

import pytest
from django.core.management import CommandError, call_command

from annotation.models import PoolEntry
from annotation.relevance.pooling import PoolingFailed, pool_build, turns_resolve
from console.selectors import pool_summary
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


def _ranked(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


@pytest.fixture
def two_runs():
    """Two runs over two turns; run A ranks a1..a40, run B ranks b1..b40 with a3 at its rank 1."""
    collection = CollectionFactory(name="ikat")
    topic = TopicFactory(collection=collection, number="1")
    t1 = TurnFactory(topic=topic, position=1)
    t2 = TurnFactory(topic=topic, position=2)
    run_a = RunFactory(collection=collection, name="A")
    run_b = RunFactory(collection=collection, name="B")
    for turn in (t1, t2):
        RankingFactory(run=run_a, turn=turn, passage_ids=_ranked("a", 40))
        RankingFactory(run=run_b, turn=turn, passage_ids=["a3"] + _ranked("b", 39))
    return collection, t1, t2, run_a, run_b


def _pooled(pool, turn) -> set[str]:
    return set(PoolEntry.objects.filter(pool=pool, turn=turn).values_list("passage_id", flat=True))


def test_it_pools_the_union_of_each_runs_top_k(two_runs):
    collection, t1, t2, run_a, run_b = two_runs

    report = pool_build(collection=collection, name="d5", depth=5)

    expected = set(_ranked("a", 5)) | {"a3"} | set(_ranked("b", 4))
    assert _pooled(report.pool, t1) == expected
    assert _pooled(report.pool, t2) == expected
    assert [line.pooled for line in report.turns] == [len(expected), len(expected)]
    assert report.size == 2 * len(expected)
    assert report.saved == 0


def test_it_records_the_best_rank_and_the_run_that_gave_it(two_runs):
    collection, t1, _t2, run_a, run_b = two_runs

    pool = pool_build(collection=collection, name="d5", depth=5).pool

    a3 = PoolEntry.objects.get(pool=pool, turn=t1, passage_id="a3")
    a4 = PoolEntry.objects.get(pool=pool, turn=t1, passage_id="a4")
    assert (a3.best_rank, a3.best_run_id, a3.via_filter) == (1, run_b.pk, False)
    assert (a4.best_rank, a4.best_run_id) == (4, run_a.pk)


def test_adaptive_pooling_admits_deep_ranks_only_where_the_filter_judge_graded_high(two_runs):
    collection, t1, t2, run_a, _run_b = two_runs
    llm = JudgeFactory(name="llm")
    # Turn 1 graded in full below the head: a6 graded 3 and b29 graded 2 enter, every other deeper
    # passage graded 1 is kept out; a31 graded 4 lies beyond depth 30. Turn 2 has no grade.
    head = set(_ranked("a", 5)) | {"a3"} | set(_ranked("b", 4))
    deeper = (set(_ranked("a", 30)) | set(_ranked("b", 29))) - head
    grades = {pid: 1 for pid in deeper} | {"a6": 3, "b29": 2, "a31": 4}
    for pid, grade in grades.items():
        RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id=pid, grade=grade)

    report = pool_build(
        collection=collection, name="adaptive", depth=30, adaptive=True, filter_judge=llm, min_grade=2
    )

    assert _pooled(report.pool, t1) == head | {"a6", "b29"}
    a6 = PoolEntry.objects.get(pool=report.pool, turn=t1, passage_id="a6")
    assert (a6.best_rank, a6.best_run_id, a6.filter_grade, a6.via_filter) == (6, run_a.pk, 3, True)
    # Candidates within depth 30: a1..a30 and b1..b29 = 59 per turn; the filter graded 48 of turn 1's
    # 50 deeper ones below 2.
    line1, _line2 = report.turns
    assert (line1.pooled, line1.from_head, line1.from_filter, line1.saved, line1.unfiltered) == (
        len(head) + 2,
        len(head),
        2,
        59 - len(head) - 2,
        0,
    )


def test_it_pools_in_full_the_deeper_ranks_the_filter_judge_did_not_grade(two_runs):
    collection, t1, t2, _run_a, _run_b = two_runs
    llm = JudgeFactory(name="llm")
    # The filter's job reached turn 1 only, and there graded a7 low and skipped a8 (no text, say).
    RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id="a7", grade=0)

    report = pool_build(
        collection=collection, name="adaptive", depth=30, adaptive=True, filter_judge=llm, min_grade=2
    )

    line1, line2 = report.turns
    # Turn 2: all 59 candidates in the pool, none counted as saved.
    assert _pooled(report.pool, t2) == set(_ranked("a", 30)) | set(_ranked("b", 29))
    assert (line2.pooled, line2.saved, line2.unfiltered) == (59, 0, 50)
    # Turn 1: only the graded a7 is saved; the other 49 deeper passages enter unfiltered.
    assert "a7" not in _pooled(report.pool, t1)
    assert (line1.pooled, line1.saved, line1.unfiltered) == (58, 1, 49)
    assert (report.saved, report.candidates, report.unfiltered) == (1, 118, 99)
    assert report.unfiltered_turns == [t1.turn_id, t2.turn_id]
    a8 = PoolEntry.objects.get(pool=report.pool, turn=t1, passage_id="a8")
    assert (a8.best_rank, a8.filter_grade, a8.via_filter) == (8, None, False)


def test_adaptive_head_and_depth_are_settable(two_runs):
    collection, t1, _t2, _run_a, _run_b = two_runs
    llm = JudgeFactory(name="llm")
    # Below the head of 2, within depth 10: a9 graded 4 enters, the rest graded 2 stay out; a11 lies deeper.
    for pid in (set(_ranked("a", 10)) | set(_ranked("b", 9))) - {"a1", "a2", "a3", "b1"}:
        RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id=pid, grade=4 if pid == "a9" else 2)
    RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id="a11", grade=4)

    report = pool_build(
        collection=collection,
        name="x",
        depth=10,
        always_depth=2,
        adaptive=True,
        filter_judge=llm,
        min_grade=3,
    )

    assert _pooled(report.pool, t1) == {"a1", "a2", "a3", "b1", "a9"}


def test_it_restricts_the_pool_to_chosen_turns(two_runs):
    collection, t1, t2, _a, _b = two_runs

    report = pool_build(
        collection=collection,
        name="one",
        depth=3,
        turns=turns_resolve(collection=collection, turn_ids=[t2.turn_id]),
    )

    assert [line.turn_id for line in report.turns] == [t2.turn_id]
    assert _pooled(report.pool, t1) == set()


def test_it_rejects_unknown_turns_and_an_existing_pool(two_runs):
    collection, *_ = two_runs
    with pytest.raises(PoolingFailed, match="99_9"):
        turns_resolve(collection=collection, turn_ids=["99_9"])
    pool_build(collection=collection, name="p", depth=3)
    with pytest.raises(PoolingFailed, match="already exists"):
        pool_build(collection=collection, name="p", depth=3)


def test_build_pool_command_reports_size_per_turn_and_savings(two_runs, tmp_path, capsys):
    collection, t1, t2, _a, _b = two_runs
    llm = JudgeFactory(name="llm")
    head = set(_ranked("a", 5)) | {"a3"} | set(_ranked("b", 4))
    for pid in (set(_ranked("a", 30)) | set(_ranked("b", 29))) - head:
        RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id=pid, grade=3 if pid == "a6" else 0)
    turns_file = tmp_path / "turns.txt"
    turns_file.write_text(f"{t1.turn_id}\n")

    call_command(
        "build_pool",
        collection="ikat",
        depth=30,
        adaptive=True,
        filter_judge="llm",
        min_grade=2,
        turns_file=str(turns_file),
    )

    out = capsys.readouterr().out
    assert f"{t1.turn_id}\t{len(head) + 1}\t{len(head)}\t1\t{59 - len(head) - 1}\t0" in out
    assert t2.turn_id not in out
    assert f"filter saved {59 - len(head) - 1}" in out
    assert "unfiltered" not in out.split("\n", 1)[1]


def test_build_pool_command_names_the_turns_the_filter_could_not_filter(capsys):
    collection = CollectionFactory(name="wide")
    topic = TopicFactory(collection=collection, number="4")
    run = RunFactory(collection=collection, name="A")
    llm = JudgeFactory(name="llm")
    turns = [TurnFactory(topic=topic, position=position) for position in range(1, 13)]
    for turn in turns:
        RankingFactory(run=run, turn=turn, passage_ids=_ranked("p", 7))
    # The filter judge graded the deeper ranks of the first turn only.
    RelevanceJudgmentFactory(judge=llm, turn=turns[0], passage_id="p6", grade=0)
    RelevanceJudgmentFactory(judge=llm, turn=turns[0], passage_id="p7", grade=4)

    call_command("build_pool", collection="wide", depth=7, adaptive=True, filter_judge="llm", min_grade=2)

    out = capsys.readouterr().out
    assert "pool adaptive7: 83 pairs over 12 turns; filter saved 1 (1.2% of 84)" in out
    assert (
        "22 deeper pairs in 11 turns entered unfiltered (the filter judge has not graded them): "
        "4_2, 4_3, 4_4, 4_5, 4_6, 4_7, 4_8, 4_9, 4_10, 4_11 and 1 more"
    ) in out
    assert PoolEntry.objects.filter(pool__name="adaptive7", best_rank__gt=5).count() == 23


def test_build_pool_command_rejects_adaptive_without_a_filter_judge(two_runs):
    with pytest.raises(CommandError, match="--filter-judge"):
        call_command("build_pool", collection="ikat", depth=30, adaptive=True)
    with pytest.raises(CommandError, match="no judge"):
        call_command(
            "build_pool", collection="ikat", depth=30, adaptive=True, filter_judge="nobody", min_grade=2
        )
    with pytest.raises(CommandError, match="no collection"):
        call_command("build_pool", collection="nope", depth=5)


def test_it_reads_back_the_summary_the_build_gave(two_runs):
    collection, t1, _t2, _run_a, _run_b = two_runs
    llm = JudgeFactory(name="llm")
    RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id="a7", grade=0)
    RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id="a8", grade=3)

    built = pool_build(
        collection=collection, name="adaptive", depth=30, adaptive=True, filter_judge=llm, min_grade=2
    )

    # One summary for a pool, whether the build returns it or the pool page reads it back later.
    assert pool_summary(pool=built.pool) == built
    assert (built.size, built.saved, built.candidates, built.left_out) == (117, 1, 118, 0)


def _counted(pool) -> tuple[int, int, int]:
    """The pool's counts as its entries give them, for the kept counts to equal."""
    entries = PoolEntry.objects.filter(pool=pool)
    deeper = pool.always_depth if pool.adaptive else pool.depth
    unfiltered = entries.filter(filter_grade__isnull=True, best_rank__gt=deeper) if pool.adaptive else []
    return (
        entries.count(),
        len(set(entries.values_list("turn_id", flat=True))),
        len({e.turn_id for e in unfiltered}),
    )


def _kept(pool) -> tuple[int, int, int]:
    pool.refresh_from_db()
    return (pool.pair_count, pool.turn_count, pool.unfiltered_turn_count)


def test_a_built_pool_keeps_the_counts_its_entries_give(two_runs):
    collection, t1, _t2, _run_a, _run_b = two_runs
    llm = JudgeFactory(name="llm")
    RelevanceJudgmentFactory(judge=llm, turn=t1, passage_id="a7", grade=0)

    plain = pool_build(collection=collection, name="d5", depth=5).pool
    adaptive = pool_build(
        collection=collection, name="adaptive", depth=30, adaptive=True, filter_judge=llm, min_grade=2
    ).pool

    assert _kept(plain) == _counted(plain) == (2 * 9, 2, 0)
    # Both turns hold deeper pairs the filter never graded.
    assert _kept(adaptive) == _counted(adaptive) == (58 + 59, 2, 2)


def test_a_rebuilt_pool_keeps_the_counts_of_its_new_entries(two_runs):
    collection, t1, _t2, _run_a, _run_b = two_runs
    pool = pool_build(collection=collection, name="p", depth=30).pool
    assert _kept(pool) == _counted(pool) == (2 * 59, 2, 0)

    pool = pool_build(collection=collection, name="p", depth=5, turns=[t1], replace=True).pool

    assert _kept(pool) == _counted(pool) == (9, 1, 0)
