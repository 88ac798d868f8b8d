"""Pair designs: stratified draws with Neyman allocation, and the pair estimators against known truth
(the iKAT 2024 qrels with synthetic runs and a noisy, miscalibrated machine; a synthetic collection)."""

import json

import ir_measures
import numpy as np
import pytest
from django.core.management.base import CommandError
from django.urls import reverse

from judging.hybrid.views import BUDGET_INITIAL
from judging.measures.hybrid.inferred import inferred_ap
from judging.measures.hybrid.pair_simulation import allocation_for, draw_block, simulate_pairs
from judging.measures.hybrid.pairs import neyman_allocation, stratified_draw
from judging.measures.hybrid.ranked import (
    coefficients,
    design_value,
    gain,
    layout_for,
    parse_ranked,
    ranked_estimates,
    sample_layout,
    sample_strata,
    true_scores,
)
from judging.measures.hybrid.sampling import SamplingError
from judging.measures.hybrid.simulation import simulate
from judging.models import HumanSample
from tests.factories import OrganiserFactory
from tests.judging.budget_page import budget_simulated
from tests.judging.helpers import BASE, run
from tests.judging.pair_data import ikat_qrels, population, runs_for, synthetic_qrels


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
    strata, counts = allocation_for(pop, measure=measure, budget=300, design="stratified")
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
    few = simulate_pairs(population=pop, measure=parse_ranked("P(rel=2)@5"), budgets=[60], repeats=20)
    assert "fewer than 30" in few.warnings[60]  # 60 pairs put too few in some run's top 5
    result = simulate_pairs(
        population=pop, measure=parse_ranked("P(rel=2)@5"), budgets=[200, 1000], repeats=500, seed=0
    )
    assert not result.warnings
    for budget in (200, 1000):
        figures = result.budgets[budget]
        for method, f in figures.items():
            # The worst of five runs, each within Monte Carlo error of the band.
            assert 0.93 - 2 * f.mc_error <= f.worst_run_coverage <= 0.97 + 2 * f.mc_error, (method, f)
            assert 0.93 <= f.coverage <= 0.97, (method, f)
        strat, ppi = figures["strat-ppi++"], figures["ppi++"]
        assert strat.mean_width <= ppi.mean_width * 1.01
        assert strat.width_ratio < 0.7  # the machine's grades pay for themselves


def test_pair_stratified_p_at_5_is_three_times_narrower_than_whole_turns_for_the_same_pairs(ikat):
    _qrels, pop, _runs = ikat
    measure = parse_ranked("P(rel=2)@5")
    pairs = 1000
    turns = round(pairs / (pop.size / len(pop.turns)))  # whole turns holding as many pooled pairs
    strat = simulate_pairs(population=pop, measure=measure, budgets=[pairs], repeats=300, seed=1)
    c = coefficients(pop, measure)
    per_turn = [
        np.stack([np.bincount(pop.turn, row * gain(g, measure), len(pop.turns)) for row in c])
        for g in (pop.human, pop.machine)
    ]
    whole = simulate(
        truth=per_turn[0],
        machine=per_turn[1],
        budgets=[turns],
        repeats=300,
        seed=1,
        methods=["classical", "ppi++"],
    )
    assert strat.budgets[pairs]["strat-ppi++"].mean_width * 3 <= whole.budgets[turns]["ppi++"].mean_width


def test_an_estimate_weights_a_stratified_samples_pairs_by_the_rank_band_they_were_drawn_in(ikat):
    _qrels, pop, _runs = ikat
    measure = parse_ranked("P(rel=2)@5")
    truth = true_scores(pop, measure, pop.human)
    strata = sample_strata(pop, "P(rel=2)@5")
    estimates = []
    for seed in range(60):
        draw = stratified_draw(machine=pop.machine, budget=1000, seed=seed, value=design_value(pop, measure))
        layout, idx = sample_layout(pop, draw.chosen, strata)
        got = ranked_estimates(
            population=pop, measure=measure, layout=layout, idx=idx, y=pop.human[idx], method="strat-ppi++"
        )
        estimates.append(got.estimate[:, 0])
    found = np.array(estimates)
    # Weighted by machine grade alone, the top-band pairs (drawn far more often) ran off by -2.0 to +1.6.
    assert np.all(np.abs(found.mean(0) - truth) < 4 * found.std(0) / np.sqrt(60))


@pytest.mark.django_db
def test_sample_for_humans_draws_a_stratified_pair_sample_and_stores_strata(hybrid_collection):
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


@pytest.mark.django_db
def test_estimate_gives_every_run_p_at_5_from_a_stratified_pair_sample(hybrid_collection):
    run(
        "sample_for_humans",
        *BASE,
        "--unit",
        "pair",
        "--measure",
        "relevant_share",
        "--design",
        "stratified",
        "--budget",
        "120",
        "--seed",
        "3",
        "--name",
        "strat",
        "--no-work",
    )
    for method in ("classical", "ppi++", "strat-ppi++"):
        data = json.loads(
            run(
                "estimate",
                *BASE,
                "--human-judge",
                "nist",
                "--unit",
                "pair",
                "--measure",
                "P(rel=2)@5",
                "--sample",
                "strat",
                "--method",
                method,
                "--format",
                "json",
            )
        )
        assert data["unit"] == "pair" and set(data["runs"]) == {"run0", "run1", "run2"}
        assert data["fpc"] is True  # the stratified variance's (1 - n_h/N_h), said as applied
        for row in data["runs"].values():
            assert row["ci"][0] <= row["estimate"] <= row["ci"][1]
            assert row["n_human"] == 120 and row["n_machine"] == 240
    # AP from a single-stage sample is refused (inferred AP's coverage was 0.00 at usual rates).
    with pytest.raises(CommandError, match="AP from a single-stage pair sample is not offered"):
        run(
            "estimate",
            *BASE,
            "--human-judge",
            "nist",
            "--unit",
            "pair",
            "--measure",
            "AP(rel=2)",
            "--sample",
            "strat",
            "--method",
            "classical",
        )
    with pytest.raises(CommandError, match="--fpc is not an option for a pair sample"):
        run("estimate", *BASE, "--human-judge", "nist", "--unit", "pair", "--measure", "P(rel=2)@5", "--fpc")


@pytest.mark.django_db
def test_simulate_budget_reports_the_pair_methods_in_the_usual_shape(hybrid_collection):
    data = json.loads(
        run(
            "simulate_budget",
            *BASE,
            "--human-judge",
            "nist",
            "--unit",
            "pair",
            "--measure",
            "P(rel=2)@5",
            "--design",
            "stratified",
            "--budgets",
            "20",
            "60",
            "500",
            "--repeats",
            "50",
            "--format",
            "json",
        )
    )
    assert data["design"] == "stratified" and data["left_out_budgets"] == [500]
    assert set(data["budgets"]) == {"20", "60"}
    figures = data["budgets"]["60"]
    assert set(figures) == {"classical", "ppi++", "strat-ppi++"}
    for f in figures.values():
        assert set(f) >= {
            "coverage",
            "worst_run_coverage",
            "mc_error",
            "mean_width",
            "width_ratio",
            "warning",
        }
    assert "fewer than 30" in data["warnings"]["20"]
    text = run(
        "simulate_budget",
        *BASE,
        "--human-judge",
        "nist",
        "--unit",
        "pair",
        "--measure",
        "P(rel=2)@5",
        "--design",
        "stratified",
        "--budgets",
        "60",
        "--repeats",
        "20",
    )
    assert "strat-ppi++" in text and "design: stratified pairs" in text


@pytest.mark.django_db
def test_estimate_refuses_ndcg_from_a_pair_sample_and_says_why(hybrid_collection):
    with pytest.raises(CommandError, match="ideal DCG") as refused:
        run("estimate", *BASE, "--human-judge", "nist", "--unit", "pair", "--measure", "nDCG@5")
    # It names what was tried and where the measurements are.
    assert "latent-class" in str(refused.value) and "bench/bench_ndcg_pairs.py" in str(refused.value)
    with pytest.raises(CommandError, match="ideal DCG"):
        run(
            "simulate_budget",
            *BASE,
            "--human-judge",
            "nist",
            "--unit",
            "pair",
            "--measure",
            "nDCG@5",
            "--budgets",
            "50",
            "--repeats",
            "10",
        )


def test_ndcg_from_pairs_runs_low_by_more_than_its_spread_which_is_why_it_is_refused(ikat):
    _qrels, pop, _runs = ikat
    measure = parse_ranked("nDCG@5")
    truth = true_scores(pop, measure, pop.human)
    strata, counts = allocation_for(pop, measure=measure, budget=1000, design="stratified")
    idx = draw_block(np.random.default_rng(0), strata, counts, 100)
    got = ranked_estimates(
        population=pop,
        measure=measure,
        layout=layout_for(strata, counts),
        idx=idx,
        y=pop.human[idx],
        method="strat-ppi++",
    )
    off = got.estimate.mean(1) - truth
    assert off.min() < -got.estimate.std(1).max()


@pytest.mark.django_db
def test_the_budget_page_offers_and_runs_the_stratified_pair_design(client, hybrid_collection):
    client.force_login(OrganiserFactory())
    url = reverse("judging:hybrid-budget", args=["hybrid"])
    assert 'name="design"' in client.get(url).content.decode()
    query = {
        "task": "relevance",
        "human_judge": "nist",
        "machine_judge": "llm",
        "unit": "pair",
        "design": "stratified",
        "measure": "P(rel=2)@5",
        "budgets": "60 120",
        "repeats": "20",
    }
    response = budget_simulated(client, "hybrid", query)
    assert response.status_code == 200
    body = response.content.decode()
    assert "strat-ppi++" in body and "stratified pairs" in body
    # Refused by the form before anything is queued.
    refused = client.post(
        reverse("judging:hybrid-budget", args=["hybrid"]), {**BUDGET_INITIAL, **query, "measure": "nDCG@5"}
    )
    assert refused.status_code == 400
    assert "needs the two-stage design" in refused.content.decode()


@pytest.mark.django_db
def test_a_stratified_sample_for_p_at_k_leans_on_the_pairs_runs_rank_within_the_cutoff(hybrid_collection):
    data = json.loads(
        run(
            "sample_for_humans",
            *BASE,
            "--unit",
            "pair",
            "--measure",
            "P(rel=2)@1",
            "--design",
            "stratified",
            "--budget",
            "60",
            "--seed",
            "2",
            "--name",
            "top",
            "--no-work",
            "--format",
            "json",
        )
    )
    top = [u for u in data["units"] if u["stratum"].endswith(",top")]
    rest = [u for u in data["units"] if u["stratum"].endswith(",rest")]
    assert data["drawn"] == 60 and len(top) > 3 * len(rest)
    assert min(u["inclusion_probability"] for u in top) > max(u["inclusion_probability"] for u in rest)
    assert HumanSample.objects.get(name="top").measure == "P(rel=2)@1"
