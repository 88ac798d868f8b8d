"""Kendall's tau between two judges' run rankings gets an interval from a bootstrap over turns: the same
percentile interval scipy's bootstrap gives, in the function and in the `rank_agreement` command."""

from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats

from judging.measures.agreement import rank_agreement
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)


def _per_turn(seed: int, runs: int, turns: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.2, 0.8, runs)[:, None]
    return np.clip(quality + rng.normal(0, 0.25, (runs, turns)), 0, 1)


def test_it_gives_kendall_tau_the_percentile_interval_of_scipys_bootstrap_over_turns():
    names, turns = [f"run{r}" for r in range(6)], [f"t{t:02d}" for t in range(30)]
    a, b = _per_turn(1, 6, 30), _per_turn(2, 6, 30)
    b[:, :4] = np.nan  # judge B did not assess four turns: its scores are means over the other 26
    per_a = {n: dict(zip(turns, row, strict=True)) for n, row in zip(names, a, strict=True)}
    per_b = {
        n: {t: v for t, v in zip(turns, row, strict=True) if not np.isnan(v)}
        for n, row in zip(names, b, strict=True)
    }

    result = rank_agreement(
        scores_a={n: float(np.mean(a[i])) for i, n in enumerate(names)},
        scores_b={n: float(np.nanmean(b[i])) for i, n in enumerate(names)},
        per_turn_a=per_a,
        per_turn_b=per_b,
        seed=7,
    )

    reference = stats.bootstrap(
        (np.arange(30),),
        lambda i: stats.kendalltau(a[:, i].mean(1), np.nanmean(b[:, i], 1)).statistic,
        vectorized=False,
        n_resamples=1000,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    ci = result["kendall_tau_ci"]
    assert result["kendall_tau_b"] == pytest.approx(stats.kendalltau(a.mean(1), np.nanmean(b, 1)).statistic)
    assert ci["ci"] == pytest.approx([reference.low, reference.high], abs=1e-12)
    assert ci["ci"][0] < result["kendall_tau_b"] < ci["ci"][1]
    assert (ci["turns"], ci["draws"], ci["confidence"]) == (30, 1000, 0.95)


def test_it_gives_no_interval_and_says_so_when_a_run_has_no_per_turn_scores():
    scores = {"r1": 0.9, "r2": 0.5, "r3": 0.1}

    result = rank_agreement(
        scores_a=scores, scores_b=scores, per_turn_a={"r1": {"t": 0.9}}, per_turn_b={"r1": {"t": 0.9}}
    )

    assert result["kendall_tau_b"] == pytest.approx(1.0)
    assert result["kendall_tau_ci"] is None
    assert (
        "No interval for Kendall's tau: the measure has no per-turn scores for every run." in result["notes"]
    )
    assert rank_agreement(scores_a=scores, scores_b=scores)["kendall_tau_ci"] is None


@pytest.fixture
def four_runs_three_turns(db):
    collection = CollectionFactory(name="tau-ci")
    a, b = JudgeFactory(name="nist"), JudgeFactory(name="llm")
    turns = [TurnFactory(topic=TopicFactory(collection=collection, number=str(n))) for n in (1, 2, 3)]
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
            RankingFactory(run=run, turn=turn, passage_ids=order[i:] + order[:i])
    return collection, a, b


def test_the_rank_agreement_command_reports_tau_with_its_interval_over_turns(four_runs_three_turns):
    collection, a, b = four_runs_three_turns
    args = ("--collection", collection.name, "--measure", "ndcg@5", "--judges", a.name, b.name)
    out, text = StringIO(), StringIO()

    call_command("rank_agreement", *args, "--format", "json", stdout=out)
    call_command("rank_agreement", *args, stdout=text)

    report = json.loads(out.getvalue())
    ci = report["kendall_tau_ci"]
    assert report["n_runs"] == 4
    assert ci["turns"] == 3 and ci["interval"] == "percentile bootstrap over turns"
    assert -1 <= ci["ci"][0] <= report["kendall_tau_b"] <= ci["ci"][1] <= 1
    assert f"95% interval    [{ci['ci'][0]:.3f}, {ci['ci'][1]:.3f}]" in text.getvalue()
    assert "3 turns, 1000 draws" in text.getvalue()
