"""Pair designs: stratified draws with Neyman allocation, and the pair estimators against known truth
(the iKAT 2024 qrels with synthetic runs and a noisy, miscalibrated machine; a synthetic collection)."""

import json

import ir_measures
import numpy as np
import pytest

from judging.hybrid.inferred import inferred_ap
from judging.hybrid.pair_simulation import allocation_for, draw_block, simulate_pairs
from judging.hybrid.pairs import neyman_allocation, stratified_draw
from judging.hybrid.ranked import layout_for, parse_ranked, ranked_estimates, true_scores
from judging.hybrid.sampling import SamplingError
from judging.models import HumanSample
from tests.judging.pair_data import ikat_qrels, population, runs_for, synthetic_qrels
from tests.judging.test_hybrid_commands import BASE, collection, run  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def ikat():
    qrels = ikat_qrels()
    return qrels, population(qrels, seed=1), runs_for(qrels, seed=2)


@pytest.mark.parametrize("measure", ["nDCG@5", "P(rel=2)@5", "AP(rel=2)"])
def test_it_scores_every_run_as_trec_eval_does_when_every_pair_is_labelled(ikat, measure):
    qrels, pop, runs = ikat
    mine = true_scores(pop, parse_ranked(measure), pop.human)
    for r, name in enumerate(pop.runs):
        reference = ir_measures.calc_aggregate([ir_measures.parse_measure(measure)], qrels, runs[name])
        assert mine[r] == pytest.approx(next(iter(reference.values())), abs=1e-4)


def test_it_equals_trec_eval_inf_ap_on_a_uniform_sample_with_unjudged_pairs(ikat):
    _qrels, pop, runs = ikat
    sampled = np.random.default_rng(0).random(pop.size) < 0.3
    partial: dict[str, dict[str, int]] = {}
    for j, key in enumerate(pop.keys):
        turn, passage = key.split("\t")
        partial.setdefault(turn, {})[passage] = int(pop.human[j]) if sampled[j] else -1  # pooled, unjudged
    for r, name in enumerate(pop.runs):
        reference = ir_measures.calc_aggregate([ir_measures.infAP(rel=2)], partial, runs[name])
        mine = inferred_ap(pop, run=r, sampled=sampled, grades=pop.human, rel=2, weights=None)
        assert mine == pytest.approx(next(iter(reference.values())), abs=1e-12)


def test_it_allocates_in_proportion_to_size_times_spread_with_two_per_stratum():
    sizes = np.array([1000, 300, 50, 3])
    assert list(neyman_allocation(sizes=sizes, spreads=None, budget=135)) == [98, 30, 5, 2]
    neyman = neyman_allocation(sizes=sizes, spreads=np.array([0.1, 1.0, 1.0, 1.0]), budget=100)
    assert neyman.sum() == 100 and neyman[1] > neyman[0] and neyman[3] >= 2
    assert list(neyman_allocation(sizes=np.array([5, 2]), spreads=None, budget=7)) == [5, 2]
    with pytest.raises(SamplingError, match="at least 8 pairs"):
        neyman_allocation(sizes=sizes, spreads=None, budget=5)


def test_it_draws_each_stratum_uniformly_and_records_its_probability():
    machine = np.repeat([0.0, 1.0, 2.0], [600, 300, 100])
    draw = stratified_draw(machine=machine, budget=100, seed=4)
    assert draw.rule == "proportional" and draw.allocation == {"m=0": 60, "m=1": 30, "m=2": 10}
    assert len(set(draw.chosen)) == 100
    assert np.allclose(draw.probability, 0.1)
    assert all(machine[j] == float(s[2:]) for j, s in zip(draw.chosen, draw.stratum, strict=True))


def test_it_estimates_p_at_k_without_bias_on_a_synthetic_collection():
    qrels = synthetic_qrels(seed=5, turns=60, per_turn=80)
    pop = population(qrels, seed=6, runs=3)
    measure = parse_ranked("P(rel=2)@5")
    truth = true_scores(pop, measure, pop.human)
    strata, counts = allocation_for(pop, budget=800, design="stratified")
    idx = draw_block(np.random.default_rng(1), strata, counts, 400)
    for method in ("classical", "ppi++", "strat-ppi++"):
        got = ranked_estimates(
            population=pop,
            measure=measure,
            layout=layout_for(strata, counts),
            idx=idx,
            y=pop.human[idx],
            method=method,
        )
        mc = got.estimate.std(1) / np.sqrt(400)
        assert np.all(np.abs(got.estimate.mean(1) - truth) < 4 * mc), method
        assert np.allclose(got.se.mean(1), got.estimate.std(1), rtol=0.15), method


def test_it_covers_p_at_5_for_the_worst_run_and_stratified_ppi_is_never_wider(ikat):
    _qrels, pop, _runs = ikat
    result = simulate_pairs(
        population=pop, measure=parse_ranked("P(rel=2)@5"), budgets=[1000, 2000], repeats=300, seed=0
    )
    for figures in result.budgets.values():
        for method, f in figures.items():
            assert 0.93 <= f.worst_run_coverage <= 0.97 + 2 * f.mc_error, (method, f)
        strat, ppi = figures["strat-ppi++"], figures["ppi++"]
        assert strat.mean_width <= ppi.mean_width * 1.01
        assert figures["strat-ppi++"].width_ratio < 0.9  # the machine's grades pay for themselves


def test_sample_for_humans_draws_a_stratified_pair_sample_and_stores_strata(collection):  # noqa: F811
    out = run(
        "sample_for_humans",
        *BASE,
        "--unit",
        "pair",
        "--measure",
        "relevant_share",
        "--design",
        "stratified",
        "--budget",
        "40",
        "--seed",
        "1",
        "--name",
        "strat",
        "--no-work",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert data["drawn"] == 40 and data["population"] == 240
    sample = HumanSample.objects.get(name="strat")
    assert sample.strategy == HumanSample.Strategy.STRATIFIED
    strata = {u["stratum"] for u in data["units"]}
    assert strata and all(s.startswith("m=") for s in strata)
    assert all(0 < u["inclusion_probability"] <= 1 for u in data["units"])
    text = run(
        "sample_for_humans",
        *BASE,
        "--unit",
        "pair",
        "--measure",
        "relevant_share",
        "--design",
        "stratified",
        "--budget",
        "40",
        "--seed",
        "1",
        "--name",
        "strat2",
        "--no-work",
        "--pilot",
        "strat",
        "--pilot-judge",
        "nist",
    )
    assert "Neyman allocation from the pilot" in text
