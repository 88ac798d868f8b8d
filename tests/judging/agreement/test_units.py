"""Selectors reading each task's units and labels for agreement, and rank agreement on run scores."""

from __future__ import annotations

import json
from io import StringIO

import ir_measures
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from annotation.models import Judge, NtnJudgment, NtrJudgment, PtkbJudgment, SupportJudgment
from judging.agreement.selectors import labels_by_judge, pairs_from_labels
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    PtkbStatementFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


def _paired_labels(*, collection, task, judge_a, judge_b, topics=None, condition=None):
    """The coded pairs of two judges, read as the agreement reports read them."""
    by_judge = labels_by_judge(
        collection=collection, task=task, judges=[judge_a, judge_b], topics=topics, condition=condition
    )
    return pairs_from_labels(task, by_judge[judge_a.id], by_judge[judge_b.id])


@pytest.fixture
def world():
    collection = CollectionFactory()
    topics = [TopicFactory(collection=collection, number=n) for n in ("7", "8")]
    turns = [TurnFactory(topic=t) for t in topics]
    other_turn = TurnFactory()  # another collection: never counted
    return collection, topics, turns, other_turn, JudgeFactory(), JudgeFactory()


def _decoded(pairs):
    return sorted(
        (pairs.topics[t], pairs.labels[a], pairs.labels[b])
        for a, b, t in zip(pairs.a, pairs.b, pairs.topic, strict=True)
    )


@pytest.mark.django_db
def test_it_pairs_relevance_labels_on_shared_units_of_the_collection_only(world):
    collection, _topics, turns, other_turn, a, b = world
    RelevanceJudgmentFactory(judge=a, turn=turns[0], passage_id="p1", grade=3)
    RelevanceJudgmentFactory(judge=b, turn=turns[0], passage_id="p1", grade=2)
    RelevanceJudgmentFactory(judge=a, turn=turns[1], passage_id="p1", grade=0)
    RelevanceJudgmentFactory(judge=b, turn=turns[1], passage_id="p1", grade=0)
    RelevanceJudgmentFactory(judge=a, turn=turns[1], passage_id="only-a", grade=4)
    RelevanceJudgmentFactory(judge=a, turn=other_turn, passage_id="p1", grade=1)
    RelevanceJudgmentFactory(judge=b, turn=other_turn, passage_id="p1", grade=1)
    pairs = _paired_labels(collection=collection, task="relevance", judge_a=a, judge_b=b)
    assert _decoded(pairs) == [("7", 3, 2), ("8", 0, 0)]
    only_8 = _paired_labels(collection=collection, task="relevance", judge_a=a, judge_b=b, topics=["8"])
    assert _decoded(only_8) == [("8", 0, 0)]


@pytest.mark.django_db
def test_it_pairs_ptkb_ntr_and_ntn_labels_as_zero_one(world):
    collection, topics, turns, _other, a, b = world
    statement = PtkbStatementFactory(topic=topics[0])
    PtkbJudgment.objects.create(judge=a, turn=turns[0], statement=statement, relevant=True)
    PtkbJudgment.objects.create(judge=b, turn=turns[0], statement=statement, relevant=False)
    response = ResponseFactory(run=RunFactory(collection=collection), turn=turns[1])
    gold = NuggetFactory(turn=turns[1])
    NtrJudgment.objects.create(judge=a, response=response, nugget=gold, matched=True)
    NtrJudgment.objects.create(judge=b, response=response, nugget=gold, matched=True)
    premise = NuggetFactory(turn=turns[1])
    NtnJudgment.objects.create(judge=a, response_nugget=premise, gold_nugget=gold, entails=False)
    NtnJudgment.objects.create(judge=b, response_nugget=premise, gold_nugget=gold, entails=True)
    assert _decoded(_paired_labels(collection=collection, task="ptkb", judge_a=a, judge_b=b)) == [("7", 1, 0)]
    assert _decoded(_paired_labels(collection=collection, task="ntr", judge_a=a, judge_b=b)) == [("8", 1, 1)]
    assert _decoded(_paired_labels(collection=collection, task="ntn", judge_a=a, judge_b=b)) == [("8", 0, 1)]


@pytest.mark.django_db
def test_it_pairs_support_labels_per_citation_and_filters_human_condition(world):
    collection, _topics, turns, _other, _a, llm = world
    llm.kind = Judge.Kind.LLM
    llm.save()
    human = JudgeFactory()
    sentence = ResponseSentenceFactory(
        response=ResponseFactory(run=RunFactory(collection=collection), turn=turns[0])
    )
    for index, (mine, machine, condition) in enumerate([("FS", "FS", "scratch"), ("NS", "PS", "post-edit")]):
        SupportJudgment.objects.create(
            judge=human,
            sentence=sentence,
            citation_index=index,
            passage_id=f"d{index}",
            label=mine,
            condition=condition,
        )
        SupportJudgment.objects.create(
            judge=llm,
            sentence=sentence,
            citation_index=index,
            passage_id=f"d{index}",
            label=machine,
            condition="machine",
        )
    both = _paired_labels(collection=collection, task="support", judge_a=human, judge_b=llm)
    assert _decoded(both) == [("7", "FS", "FS"), ("7", "NS", "PS")]
    scratch = _paired_labels(
        collection=collection, task="support", judge_a=human, judge_b=llm, condition="scratch"
    )
    assert _decoded(scratch) == [("7", "FS", "FS")]
    with pytest.raises(
        ValueError, match="applies to the support, nugget-importance, nugget-assignment tasks only"
    ):
        _paired_labels(collection=collection, task="ptkb", judge_a=human, judge_b=llm, condition="scratch")


@pytest.mark.django_db
def test_it_correlates_ndcg5_rankings_under_two_judges_like_ir_measures_and_scipy(world):
    collection, _topics, turns, _other, a, b = world
    grades_a = {"d1": 4, "d2": 2, "d3": 0, "d4": 1, "d5": 3, "d6": 0}
    grades_b = {"d1": 3, "d2": 0, "d3": 1, "d4": 2, "d5": 3, "d6": 1}
    for turn in turns:
        for pid in grades_a:
            RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=pid, grade=grades_a[pid])
            RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=pid, grade=grades_b[pid])
    orders = {
        "run-a": ["d1", "d2", "d3", "d4", "d5"],
        "run-b": ["d5", "d4", "d3", "d2", "d1"],
        "run-c": ["d6", "d3", "d1", "d2", "d4"],
        "run-d": ["d2", "d6", "d5", "d1", "d3"],
    }
    for name, order in orders.items():
        run = RunFactory(collection=collection, name=name)
        for i, turn in enumerate(turns):
            RankingFactory(run=run, turn=turn, passage_ids=order if i == 0 else order[::-1])
    out = StringIO()
    call_command(
        "rank_agreement",
        "--collection",
        collection.name,
        "--measure",
        "ndcg@5",
        "--judges",
        a.name,
        b.name,
        "--format",
        "json",
        stdout=out,
    )
    report = json.loads(out.getvalue())

    def scores(grades):
        qrels = {t.turn_id: dict(grades) for t in turns}
        result = {}
        for name, order in orders.items():
            run = {
                t.turn_id: {p: float(5 - r) for r, p in enumerate(order if i == 0 else order[::-1])}
                for i, t in enumerate(turns)
            }
            result[name] = ir_measures.calc_aggregate([ir_measures.nDCG @ 5], qrels, run)[
                ir_measures.nDCG @ 5
            ]
        return result

    expected_a, expected_b = scores(grades_a), scores(grades_b)
    names = sorted(orders)
    assert report["n_runs"] == 4
    assert {r["run"]: r["score_a"] for r in report["runs"]} == pytest.approx(expected_a)
    assert {r["run"]: r["score_b"] for r in report["runs"]} == pytest.approx(expected_b)
    assert report["kendall_tau_b"] == pytest.approx(
        stats.kendalltau([expected_a[n] for n in names], [expected_b[n] for n in names]).statistic
    )
    assert report["spearman_rho"] == pytest.approx(
        stats.spearmanr([expected_a[n] for n in names], [expected_b[n] for n in names]).statistic
    )


@pytest.mark.django_db
def test_it_refuses_rank_agreement_without_runs(world):
    collection, _topics, turns, _other, a, b = world
    RelevanceJudgmentFactory(judge=a, turn=turns[0], passage_id="p", grade=1)
    with pytest.raises(CommandError, match="no run of collection"):
        call_command(
            "rank_agreement",
            "--collection",
            collection.name,
            "--measure",
            "ndcg@5",
            "--judges",
            a.name,
            b.name,
            stdout=StringIO(),
        )


@pytest.mark.django_db
def test_it_ranks_runs_by_ntr_nugget_recall_under_two_matching_judges(world):
    collection, _topics, turns, _other, crowd, llm = world
    gold_judge = JudgeFactory()
    golds = [NuggetFactory(judge=gold_judge, turn=turns[0]) for _ in range(4)]
    matched = {"crowd": {"r1": 3, "r2": 1, "r3": 2}, "llm": {"r1": 4, "r2": 2, "r3": 1}}
    for name in ("r1", "r2", "r3"):
        response = ResponseFactory(run=RunFactory(collection=collection, name=name), turn=turns[0])
        for judge, key in ((crowd, "crowd"), (llm, "llm")):
            for i, nugget in enumerate(golds):
                NtrJudgment.objects.create(
                    judge=judge, response=response, nugget=nugget, matched=i < matched[key][name]
                )
    out = StringIO()
    call_command(
        "rank_agreement",
        "--collection",
        collection.name,
        "--measure",
        "nugget-recall-ntr",
        "--judges",
        crowd.name,
        llm.name,
        "--format",
        "json",
        stdout=out,
    )
    report = json.loads(out.getvalue())
    assert {r["run"]: r["score_a"] for r in report["runs"]} == pytest.approx(
        {n: m / 4 for n, m in matched["crowd"].items()}
    )
    assert {r["run"]: r["score_b"] for r in report["runs"]} == pytest.approx(
        {n: m / 4 for n, m in matched["llm"].items()}
    )
    names = ["r1", "r2", "r3"]
    assert report["kendall_tau_b"] == pytest.approx(
        stats.kendalltau([matched["crowd"][n] for n in names], [matched["llm"][n] for n in names]).statistic
    )
