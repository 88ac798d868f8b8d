"""The `judge` command on LLM tasks, against the loopback OpenAI-compatible fake."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from annotation.models import RelevanceJudgment, SupportJudgment
from judging.models import JudgeJob, LlmCall
from tests.factories import (
    CollectionFactory,
    PassageFactory,
    RankingFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TurnFactory,
)
from tests.judging.fake_openai import count_tokens
from tests.judging.helpers import run

pytestmark = pytest.mark.django_db

PRICE_IN, PRICE_OUT = 0.15, 0.60  # USD per million tokens, set in the tests' LLM_PRICES


@pytest.fixture
def ranked():
    """Two turns, each with a run ranking three passages that have text."""
    collection = CollectionFactory(name="bikes")
    run = RunFactory(collection=collection, name="bm25")
    ids = ["bike:1", "bike:2", "bike:3"]
    for pid in ids:
        PassageFactory(collection=collection, passage_id=pid, text=f"Passage {pid} on bike frame sizes.")
    turns = [TurnFactory(topic__collection=collection) for _ in range(2)]
    for turn in turns:
        RankingFactory(run=run, turn=turn, passage_ids=ids)
    return collection, turns


def expected_cost(received) -> float:
    """The fake's own token counts (one per word) priced by hand: the independent figure to compare with."""
    tokens_in = sum(count_tokens(r.prompt) for r in received)
    tokens_out = sum(count_tokens("Grade: 2") for _ in received)
    return (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6


def test_judge_relevance_prints_calls_cache_and_cost_and_a_rerun_calls_nothing(fake_openai, ranked, settings):
    settings.LLM_PRICES = {"gpt-4o-mini": (PRICE_IN, PRICE_OUT)}
    fake_openai.responder = lambda prompt: "Grade: 2"

    first = run("judge", "relevance", "--collection", "bikes", "--judge", "llm-rel")

    assert len(fake_openai.received) == 6
    cost = expected_cost(fake_openai.received)
    assert cost > 0
    assert "6 units (0 failed), 6 calls made, 0 from the cache" in first
    job = JudgeJob.objects.get()
    assert (job.task, job.status, job.calls_made, job.cache_hits) == ("relevance", "done", 6, 0)
    # Each call's cost is kept to the micro-dollar, so six calls may drift by half a micro-dollar each.
    assert abs(float(job.cost_usd) - cost) <= 6 * 0.5e-6
    assert f"cost ${job.cost_usd:.4f}" in first
    assert RelevanceJudgment.objects.filter(judge__name="llm-rel", grade=2).count() == 6

    second = run("judge", "relevance", "--collection", "bikes", "--judge", "llm-rel")

    assert "6 units (0 failed), 0 calls made, 6 from the cache" in second
    assert "cost $0.0000" in second
    assert len(fake_openai.received) == 6
    assert LlmCall.objects.count() == 6
    assert RelevanceJudgment.objects.filter(judge__name="llm-rel").count() == 6


def test_judge_run_again_with_the_same_options_answers_from_the_cache(fake_openai, ranked):
    """The options a job records are only those that change its work, so the same command finds them."""
    fake_openai.responder = lambda prompt: "Grade: 1"
    _, turns = ranked
    args = ("relevance", "--collection", "bikes", "--judge", "both", "--turns", turns[0].turn_id)
    run("judge", *args, "--depth", "2")

    again = run("judge", *args, "--depth", "2")

    assert "2 units (0 failed), 0 calls made, 2 from the cache" in again
    first, second = JudgeJob.objects.order_by("id")
    assert first.options == second.options == {"turns": [turns[0].turn_id], "depth": 2}
    assert len(fake_openai.received) == 2


def test_judge_support_labels_each_cited_sentence(fake_openai):
    fake_openai.responder = lambda prompt: "Partial support"
    collection = CollectionFactory(name="rag")
    turn = TurnFactory(topic__collection=collection)
    PassageFactory(collection=collection, passage_id="doc:1", text="Bikes have two wheels.")
    response = ResponseFactory(run=RunFactory(collection=collection, name="r1"), turn=turn)
    cited = ResponseSentenceFactory(
        response=response, index=0, text="A bike has two wheels.", citations=["doc:1"]
    )
    ResponseSentenceFactory(response=response, index=1, text="No citation here.", citations=[])

    out = run("judge", "support", "--collection", "rag", "--judge", "llm-support")

    assert "1 unit (0 failed), 1 call made, 0 from the cache" in out
    label = SupportJudgment.objects.get(judge__name="llm-support")
    assert (label.sentence_id, label.passage_id, label.label) == (cited.pk, "doc:1", "PS")


def test_judge_rejects_an_unknown_task_a_missing_gold_judge_and_dry_runs_of_nli(fake_openai, ranked):
    with pytest.raises(CommandError, match="invalid choice: 'grading'"):
        run("judge", "grading", "--collection", "bikes", "--judge", "j")
    with pytest.raises(CommandError, match="needs the judge whose gold nuggets"):
        run("judge", "ntr", "--collection", "bikes", "--judge", "j")
    with pytest.raises(CommandError, match="NLI tasks make no paid call"):
        run("judge", "ntn", "--collection", "bikes", "--judge", "j", "--dry-run")
    with pytest.raises(CommandError, match="no collection named 'nope'"):
        run("judge", "relevance", "--collection", "nope", "--judge", "j")
    assert not JudgeJob.objects.exists()
    assert fake_openai.received == []
