"""Weighted support precision and recall (TREC 2024 RAG support evaluation) and run rankings under judges."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import SUPPORT_WEIGHTS, ResponseSentence, SupportJudgment
from judging.measures.support import (
    answer_support,
    compare_judges,
    leaderboard,
    mean_sentences_per_answer,
    rank_correlation,
)
from judging.scores.support import support_scores
from tests.factories import JudgeFactory


def test_the_studys_worked_example_gives_precision_075_and_recall_05():
    # a1 cites p1 (partial support), a2 cites p2 (full support), a3 cites nothing.
    precision, recall = answer_support([["PS"], ["FS"], []], weights=SUPPORT_WEIGHTS)

    assert precision == pytest.approx(0.75)
    assert recall == pytest.approx(0.5)


def test_uncited_sentences_lower_recall_but_not_precision():
    assert answer_support([["FS"], ["FS"]], weights=SUPPORT_WEIGHTS) == (1.0, 1.0)
    assert answer_support([["FS"], ["FS"], [], []], weights=SUPPORT_WEIGHTS) == (1.0, 0.5)


def test_an_answer_citing_nothing_scores_zero():
    assert answer_support([[], []], weights=SUPPORT_WEIGHTS) == (0.0, 0.0)


def test_a_sentence_counts_its_best_supported_citation_in_recall_when_several_are_judged():
    precision, recall = answer_support([["NS", "FS"], ["PS"]], weights=SUPPORT_WEIGHTS)

    assert precision == pytest.approx(0.5)
    assert recall == pytest.approx(0.75)


def test_rank_correlation_of_identical_and_reversed_rankings():
    a = {"r1": 0.9, "r2": 0.5, "r3": 0.1}

    same = rank_correlation(a, {"r1": 0.8, "r2": 0.4, "r3": 0.0})
    reversed_ = rank_correlation(a, {"r1": 0.0, "r2": 0.4, "r3": 0.8})

    assert (same["kendall_tau"], same["spearman_rho"], same["runs"]) == (
        pytest.approx(1.0),
        pytest.approx(1.0),
        3,
    )
    assert (reversed_["kendall_tau"], reversed_["spearman_rho"]) == (pytest.approx(-1.0), pytest.approx(-1.0))


def test_rank_correlation_with_one_swap_of_four_runs():
    # One discordant pair of six: tau = (5 - 1) / 6; rho = 1 - 6 * (1 + 1) / (4 * 15) = 0.8.
    result = rank_correlation({"a": 4, "b": 3, "c": 2, "d": 1}, {"a": 4, "b": 3, "c": 1, "d": 2, "extra": 9})

    assert result["runs"] == 4
    assert result["kendall_tau"] == pytest.approx(4 / 6)
    assert result["spearman_rho"] == pytest.approx(0.8)


def test_rank_correlation_needs_three_shared_runs():
    assert rank_correlation({"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 1.0, "c": 0.5}) == {
        "runs": 2,
        "kendall_tau": None,
        "spearman_rho": None,
    }


def _label(judge, run, topic, index, label, citation_index=0):
    sentence = ResponseSentence.objects.get(
        response__run__name=run, response__turn__turn_id=topic, index=index
    )
    return SupportJudgment.objects.create(
        judge=judge,
        sentence=sentence,
        citation_index=citation_index,
        passage_id=sentence.citations[citation_index],
        label=label,
    )


def test_the_worked_example_holds_on_imported_answers(rag):
    judge = JudgeFactory(name="nist")
    _label(judge, "rag-a", "2024-1", 0, "PS")
    _label(judge, "rag-a", "2024-1", 1, "FS")

    scores = support_scores(collection=rag, judge=judge)

    topic = scores["per_topic"]["rag-a"]["2024-1"]
    assert topic == {
        "weighted_precision": pytest.approx(0.75),
        "weighted_recall": pytest.approx(0.5),
        "sentences": 3,
    }
    assert scores["runs"]["rag-a"]["topics"] == 1


def test_runs_average_their_topics_and_skip_answers_the_judge_left_unlabelled(rag, gpt):
    scores = support_scores(collection=rag, judge=gpt)

    # rag-a: 2024-1 PS FS + uncited -> (0.75, 0.5); 2024-2 FS FS -> (1, 1).
    # rag-b: 2024-1 FS FS -> (1, 1); 2024-2 PS + uncited -> (0.5, 0.25).
    assert scores["runs"]["rag-a"] == {
        "weighted_precision": pytest.approx(0.875),
        "weighted_recall": pytest.approx(0.75),
        "sentences": 5,
        "topics": 2,
    }
    assert scores["runs"]["rag-b"] == {
        "weighted_precision": pytest.approx(0.75),
        "weighted_recall": pytest.approx(0.625),
        "sentences": 4,
        "topics": 2,
    }
    assert mean_sentences_per_answer(scores) == pytest.approx(9 / 4)
    assert [row.run for row in leaderboard(scores)] == ["rag-a", "rag-b"]


def test_a_judge_that_assessed_one_topic_scores_only_that_topic(rag):
    judge = JudgeFactory(name="human")
    _label(judge, "rag-b", "2024-2", 0, "FS")

    scores = support_scores(collection=rag, judge=judge)

    assert scores["per_topic"] == {
        "rag-b": {"2024-2": {"weighted_precision": 1.0, "weighted_recall": 0.5, "sentences": 2}}
    }


def test_compare_judges_gives_no_correlation_per_measure_over_two_runs(rag, gpt):
    human = JudgeFactory(name="human")
    _label(human, "rag-a", "2024-1", 0, "NS")
    _label(human, "rag-a", "2024-1", 1, "NS")
    _label(human, "rag-b", "2024-1", 0, "FS")
    _label(human, "rag-b", "2024-1", 1, "FS")

    result = compare_judges(
        support_scores(collection=rag, judge=gpt), support_scores(collection=rag, judge=human)
    )

    # Two runs would give tau -1 whatever the labels: too few to say anything about the ranking.
    assert result["weighted_precision"] == {"runs": 2, "kendall_tau": None, "spearman_rho": None}
    assert result["weighted_recall"]["runs"] == 2


@pytest.mark.django_db
def test_support_metrics_command_writes_the_json_shape(rag, gpt):
    human = JudgeFactory(name="human")
    _label(human, "rag-a", "2024-1", 0, "PS")
    _label(human, "rag-b", "2024-1", 0, "FS")
    out = StringIO()

    call_command(
        "support_metrics", collection="rag24", judge="gpt-4o", compare="human", format="json", stdout=out
    )

    payload = json.loads(out.getvalue())
    assert set(payload) == {"runs", "per_topic", "correlation"}
    assert payload["runs"]["rag-a"]["weighted_precision"] == pytest.approx(0.875)
    assert set(payload["runs"]["rag-a"]) == {"weighted_precision", "weighted_recall", "sentences", "topics"}
    assert payload["per_topic"]["rag-b"]["2024-2"]["weighted_recall"] == pytest.approx(0.25)
    assert payload["correlation"]["judges"] == ["gpt-4o", "human"]


@pytest.mark.django_db
def test_support_metrics_command_prints_a_leaderboard(rag, gpt):
    out = StringIO()

    call_command("support_metrics", collection="rag24", judge="gpt-4o", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[1].split()[:4] == ["1", "rag-a", "0.8750", "0.7500"]
    assert lines[2].split()[:4] == ["2", "rag-b", "0.7500", "0.6250"]
    assert lines[-1] == "mean sentences per answer: 2.25"


@pytest.mark.django_db
def test_support_metrics_command_rejects_an_unknown_judge(rag):
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        call_command("support_metrics", collection="rag24", judge="nobody")
