"""runs_evaluate on small hand-made cases whose answers follow from the measures' definitions."""

import math

import pytest

from judging.measures.ir import EvaluationError
from judging.scores.relevance import runs_evaluate
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


@pytest.fixture
def collection():
    return CollectionFactory()


def make_turn(collection):
    return TurnFactory(topic=TopicFactory(collection=collection))


def judge_turn(judge, turn, grades):
    for passage_id, grade in grades.items():
        RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=passage_id, grade=grade)


def rank(run, turn, passage_ids):
    return RankingFactory(run=run, turn=turn, passage_ids=passage_ids)


def test_it_scores_one_grade_2_passage_ranked_first(collection, judge):
    turn = make_turn(collection)
    judge_turn(judge, turn, {"p-rel": 2, "p-non": 0})
    run = RunFactory(collection=collection)
    rank(run, turn, ["p-rel"])

    result = runs_evaluate(collection=collection, judge=judge)

    scores = result.runs[run.name]
    assert scores["P(rel=2)@20"] == pytest.approx(1 / 20)
    assert scores["R(rel=2)@20"] == pytest.approx(1.0)
    assert scores["AP(rel=2)"] == pytest.approx(1.0)
    assert scores["nDCG@5"] == pytest.approx(1.0)
    assert scores["Judged@10"] == pytest.approx(1.0)


def test_it_uses_grades_as_gains_and_counts_binary_relevance_from_the_threshold(collection, judge):
    turn = make_turn(collection)
    # a (2) first, an unjudged passage, b (3) third; c (2) and d (4) never retrieved.
    judge_turn(judge, turn, {"a": 2, "b": 3, "c": 2, "d": 4, "z": 1})
    run = RunFactory(collection=collection)
    rank(run, turn, ["a", "unjudged", "b", "z"])

    at2 = runs_evaluate(collection=collection, judge=judge, rel_threshold=2).runs[run.name]
    at3 = runs_evaluate(collection=collection, judge=judge, rel_threshold=3).runs[run.name]

    dcg = 2 / math.log2(2) + 3 / math.log2(4) + 1 / math.log2(5)
    ideal = 4 / math.log2(2) + 3 / math.log2(3) + 2 / math.log2(4) + 2 / math.log2(5) + 1 / math.log2(6)
    assert at2["nDCG@5"] == pytest.approx(dcg / ideal)
    assert at2["P(rel=2)@20"] == pytest.approx(2 / 20)
    assert at2["R(rel=2)@20"] == pytest.approx(2 / 4)
    assert at2["AP(rel=2)"] == pytest.approx((1 / 1 + 2 / 3) / 4)
    # ir_measures divides by the number retrieved when a run holds fewer than 10 passages.
    assert at2["Judged@10"] == pytest.approx(3 / 4)
    assert set(at3) == {"nDCG@5", "P(rel=3)@20", "R(rel=3)@20", "R(rel=3)@1000", "AP(rel=3)", "Judged@10"}
    assert at3["P(rel=3)@20"] == pytest.approx(1 / 20)
    assert at3["R(rel=3)@20"] == pytest.approx(1 / 2)
    assert at3["AP(rel=3)"] == pytest.approx((1 / 3) / 2)
    assert at3["nDCG@5"] == pytest.approx(at2["nDCG@5"])


def test_it_cuts_recall_at_1000(collection, judge):
    turn = make_turn(collection)
    judge_turn(judge, turn, {"early": 2, "late": 2})
    run = RunFactory(collection=collection)
    filler = [f"f{i}" for i in range(1200)]
    rank(run, turn, ["early", *filler[:998], "x", "late", *filler[998:]])

    scores = runs_evaluate(collection=collection, judge=judge).runs[run.name]

    assert scores["R(rel=2)@20"] == pytest.approx(0.5)
    assert scores["R(rel=2)@1000"] == pytest.approx(0.5)


def test_it_scores_zero_for_a_judged_turn_the_run_lacks(collection, judge):
    first, second = make_turn(collection), make_turn(collection)
    judge_turn(judge, first, {"a": 3})
    judge_turn(judge, second, {"b": 3})
    run = RunFactory(collection=collection)
    rank(run, first, ["a"])

    result = runs_evaluate(collection=collection, judge=judge)

    assert result.per_turn[run.name][first.turn_id]["nDCG@5"] == pytest.approx(1.0)
    assert result.per_turn[run.name][second.turn_id] == dict.fromkeys(result.measures, 0.0)
    assert result.runs[run.name]["nDCG@5"] == pytest.approx(0.5)
    assert result.runs[run.name]["Judged@10"] == pytest.approx(0.5)
    assert result.missing[run.name] == [second.turn_id]


def test_it_ignores_turns_the_judge_did_not_assess(collection, judge):
    judged, unjudged = make_turn(collection), make_turn(collection)
    judge_turn(judge, judged, {"a": 2})
    run = RunFactory(collection=collection)
    rank(run, judged, ["a"])
    rank(run, unjudged, ["nothing-relevant"])

    result = runs_evaluate(collection=collection, judge=judge)

    assert result.turns == [judged.turn_id]
    assert list(result.per_turn[run.name]) == [judged.turn_id]
    assert result.runs[run.name]["nDCG@5"] == pytest.approx(1.0)


def test_it_uses_only_the_chosen_judges_labels(collection, judge):
    turn = make_turn(collection)
    judge_turn(judge, turn, {"a": 0, "b": 4})
    judge_turn(JudgeFactory(), turn, {"a": 4, "b": 0})
    run = RunFactory(collection=collection)
    rank(run, turn, ["a"])

    scores = runs_evaluate(collection=collection, judge=judge).runs[run.name]

    assert scores["nDCG@5"] == 0.0
    assert scores["P(rel=2)@20"] == 0.0


def test_it_evaluates_only_the_chosen_runs(collection, judge):
    turn = make_turn(collection)
    judge_turn(judge, turn, {"a": 2})
    chosen, other = RunFactory(collection=collection), RunFactory(collection=collection)
    rank(chosen, turn, ["a"])
    rank(other, turn, ["a"])

    result = runs_evaluate(collection=collection, judge=judge, runs=[chosen])

    assert list(result.runs) == [chosen.name]


def test_it_rejects_a_threshold_outside_the_grades(collection, judge):
    judge_turn(judge, make_turn(collection), {"a": 2})
    for bad in (0, 5):
        with pytest.raises(EvaluationError, match="between 1 and 4"):
            runs_evaluate(collection=collection, judge=judge, rel_threshold=bad)


def test_it_rejects_a_judge_without_labels_on_the_collection(collection, judge):
    judge_turn(judge, TurnFactory(), {"a": 2})  # labels on another collection only
    with pytest.raises(EvaluationError, match="no relevance judgments"):
        runs_evaluate(collection=collection, judge=judge)


def test_it_rejects_a_run_of_another_collection(collection, judge):
    judge_turn(judge, make_turn(collection), {"a": 2})
    with pytest.raises(EvaluationError, match="not a run of collection"):
        runs_evaluate(collection=collection, judge=judge, runs=[RunFactory()])
