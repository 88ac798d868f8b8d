"""The campaign report reads each task's labels, the runs' rankings and the answers once for all judges:
its query count does not grow with the judges it compares, and the shared reads give the numbers that
reading per judge gives."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from ir_measures import nDCG

from annotation.models import Judge, SupportJudgment
from judging.agreement.label_table import LabelTable
from judging.agreement.reports import campaign_report
from judging.agreement.selectors import pairs_from_labels
from judging.scores.relevance import runs_evaluate, runs_evaluate_judges
from judging.scores.support import support_scores, support_scores_by_judge
from tests.factories import (
    AssessorJudgeFactory,
    CollectionFactory,
    JudgeFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


def test_it_pairs_any_two_judges_of_a_label_table_as_pairs_from_labels():
    # Unit ids and topic numbers that sort differently as text and as numbers ("10" < "9").
    by_judge = {
        1: {(9, "p2"): ("9", 3), (10, "p1"): ("10", 0), (10, "p10"): ("10", 4), (2, "p1"): ("2", 1)},
        2: {(10, "p10"): ("10", 4), (9, "p2"): ("9", 2), (2, "p1"): ("2", 1), (11, "x"): ("10", 2)},
        3: {(11, "x"): ("10", 0), (9, "p2"): ("9", 0)},
        4: {(5, "only"): ("5", 1)},
    }
    table = LabelTable.of("relevance", by_judge)

    for a in by_judge:
        for b in by_judge:
            expected = pairs_from_labels("relevance", by_judge[a], by_judge[b])
            pairs = table.pairs(a, b)
            assert (pairs.n, pairs.topics, pairs.labels) == (expected.n, expected.topics, expected.labels)
            for name in ("a", "b", "topic"):
                assert getattr(pairs, name).tolist() == getattr(expected, name).tolist()
                assert getattr(pairs, name).dtype == np.int64


def test_it_rejects_a_label_outside_the_tasks_scale():
    with pytest.raises(ValueError, match="label 7 is not one of"):
        LabelTable.of("relevance", {1: {(1, "p1"): ("1", 7)}})


@pytest.fixture
def campaign(db):
    """Two topics of two turns, a ranked run and an answer run, two relevance and one support judge."""
    collection = CollectionFactory()
    turns = [TurnFactory(topic=topic) for topic in TopicFactory.create_batch(2, collection=collection)]
    turns += [TurnFactory(topic=turns[0].topic), TurnFactory(topic=turns[1].topic)]
    for name, order in (("bm25", ["p1", "p2", "p3"]), ("splade", ["p3", "p1", "p2"])):
        run = RunFactory(collection=collection, name=name)
        for turn in turns[:3]:
            RankingFactory(run=run, turn=turn, passage_ids=order)
    sentences = []
    answers = RunFactory(collection=collection, name="rag")
    for turn in turns:
        response = ResponseFactory(run=answers, turn=turn)
        sentences.append(ResponseSentenceFactory(response=response, citations=["p1"]))
    relevance = [AssessorJudgeFactory(), JudgeFactory(kind=Judge.Kind.LLM)]
    _relevance_labels(relevance[0], turns, grades=[3, 0, 2])
    _relevance_labels(relevance[1], turns, grades=[2, 1, 2])
    support = [JudgeFactory(kind=Judge.Kind.LLM)]
    _support_labels(support[0], sentences, ["FS", "PS", "NS", "FS"])
    return collection, turns, sentences, relevance, support


def _relevance_labels(judge, turns, *, grades):
    for turn in turns:
        for passage, grade in zip(("p1", "p2", "p3"), grades, strict=True):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=passage, grade=grade)


def _support_labels(judge, sentences, labels):
    for sentence, label in zip(sentences, labels, strict=True):
        SupportJudgment.objects.create(
            judge=judge, sentence=sentence, citation_index=0, passage_id="p1", label=label
        )


def _queries(collection) -> int:
    with CaptureQueriesContext(connection) as queries:
        campaign_report(collection=collection, resamples=10)
    return len(queries)


def test_it_reads_the_same_number_of_times_for_more_judges(campaign):
    collection, turns, sentences, _relevance, _support = campaign
    before = _queries(collection)

    _relevance_labels(JudgeFactory(kind=Judge.Kind.LLM), turns, grades=[4, 4, 0])
    _relevance_labels(AssessorJudgeFactory(), turns[:2], grades=[1, 2, 3])
    _support_labels(JudgeFactory(kind=Judge.Kind.NLI), sentences, ["NS", "NS", "PS", "FS"])
    report = campaign_report(collection=collection, resamples=10)

    assert _queries(collection) == before
    relevance, support = report["sections"][0], report["sections"][-1]
    assert (len(relevance["rows"]), len(support["rows"])) == (6, 1)
    assert all(row["rank"]["n_runs"] == 2 for row in relevance["rows"])


def test_it_scores_runs_under_several_judges_as_under_each_alone(campaign):
    collection, turns, _sentences, (assessor, llm), _support = campaign
    partial = JudgeFactory()
    _relevance_labels(partial, turns[3:], grades=[0, 4, 1])  # a turn no run ranked
    unlabelled = JudgeFactory()

    evaluations = runs_evaluate_judges(
        collection=collection, judges=[assessor, llm, partial, unlabelled], measures=[nDCG @ 5]
    )

    assert set(evaluations) == {assessor.id, llm.id, partial.id}
    for judge in (assessor, llm, partial):
        alone = runs_evaluate(collection=collection, judge=judge, measures=[nDCG @ 5])
        shared = evaluations[judge.id]
        assert (shared.runs, shared.per_turn, shared.missing, shared.turns) == (
            alone.runs,
            alone.per_turn,
            alone.missing,
            alone.turns,
        )
    assert evaluations[partial.id].runs["bm25"]["nDCG@5"] == 0.0


def test_it_scores_support_under_several_judges_as_under_each_alone(campaign):
    collection, _turns, sentences, _relevance, (llm,) = campaign
    partial = JudgeFactory()
    _support_labels(partial, sentences[:2], ["PS", "FS"])
    unlabelled = JudgeFactory()

    scores = support_scores_by_judge(collection=collection, judges=[llm, partial, unlabelled])

    for judge in (llm, partial, unlabelled):
        assert scores[judge.id] == support_scores(collection=collection, judge=judge)
    assert scores[partial.id]["runs"]["rag"]["topics"] == 2
    assert scores[unlabelled.id] == {"runs": {}, "per_topic": {}}


def test_it_scores_the_head_of_each_ranking_as_the_whole_ranking_ties_at_the_cut_included(db):
    collection = CollectionFactory()
    turns = TurnFactory.create_batch(2, topic=TopicFactory(collection=collection))
    judge = JudgeFactory()
    for turn in turns:
        for passage, grade in (("a", 0), ("b", 3), ("c", 1), ("d", 4), ("e", 2)):
            RelevanceJudgmentFactory(judge=judge, turn=turn, passage_id=passage, grade=grade)
    run = RunFactory(collection=collection)
    # Which of b, c and d takes the second place is decided among passages tied at the cut.
    RankingFactory(run=run, turn=turns[0], passage_ids=["a", "b", "c", "d", "e"], scores=[9, 5, 5, 5, 1])
    RankingFactory(run=run, turn=turns[1], passage_ids=["e", "d", "c", "b", "a"], scores=[2, 2, 1, 1, 0])
    RunFactory(collection=collection)  # no ranking at all

    for cutoff in (1, 2, 3):
        whole = runs_evaluate_judges(collection=collection, judges=[judge], measures=[nDCG @ cutoff])
        head = runs_evaluate_judges(
            collection=collection, judges=[judge], measures=[nDCG @ cutoff], head=cutoff
        )

        assert head[judge.id].per_turn == whole[judge.id].per_turn
    assert whole[judge.id].per_turn[run.name][turns[0].turn_id]["nDCG@3"] > 0
