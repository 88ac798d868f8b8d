"""Rank correlations count only runs ranked under both judges: response-only runs (no passage ranked)
are left out and counted, fewer than three runs give no correlation, and the scatter does not print the
names of runs on one point on top of each other."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy import stats

from judging.agreement.reports.campaign import campaign_report
from judging.agreement.reports.charts import ranking_scatter, scatter_labels
from judging.measures.agreement import rank_agreement
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

# What the pages say, computed within the request (tests/judging/conftest.py).
pytestmark = pytest.mark.usefixtures("reports_in_request")


def test_it_leaves_out_runs_without_a_ranking_and_says_how_many():
    scored = {"r1": 0.5, "r2": 0.3, "r3": 0.1, "r4": 0.4}
    other = {"r1": 0.45, "r2": 0.35, "r3": 0.05, "r4": 0.1}
    unranked = {f"resp{i}": 0.0 for i in range(23)}

    result = rank_agreement(
        scores_a={**scored, **unranked},
        scores_b={**other, **unranked},
        left_out=dict.fromkeys(unranked, "without a ranking"),
    )

    runs = sorted(scored)
    assert result["n_runs"] == 4
    assert result["kendall_tau_b"] == pytest.approx(
        stats.kendalltau([scored[r] for r in runs], [other[r] for r in runs]).statistic
    )
    assert result["kendall_tau_b"] < 1.0
    assert [row["run"] for row in result["runs"]] == ["r1", "r4", "r2", "r3"]
    assert len(result["left_out"]) == 23
    assert {"run": "resp0", "reason": "without a ranking"} in result["left_out"]
    assert "23 runs without a ranking left out." in result["notes"]
    assert result["only_a"] == [] and result["only_b"] == []


def test_it_gives_no_rank_correlation_for_fewer_than_three_runs():
    result = rank_agreement(scores_a={"r1": 0.9, "r2": 0.1}, scores_b={"r1": 0.8, "r2": 0.2})

    assert result["n_runs"] == 2
    assert result["kendall_tau_b"] is None and result["spearman_rho"] is None
    assert result["notes"] == [
        "Kendall's tau and Spearman's rho cannot be computed: 2 runs scored under both judges, "
        "and a rank correlation needs at least 3."
    ]


@pytest.fixture
def ranked_and_response_only(db):
    """Three runs that rank passages and two response-only runs, under two judges' relevance labels."""
    collection = CollectionFactory(name="left-out")
    a, b = JudgeFactory(name="nist"), JudgeFactory(name="gpt")
    turns = [TurnFactory(topic=TopicFactory(collection=collection, number=str(n))) for n in (1, 2)]
    grades_a = {"d1": 4, "d2": 2, "d3": 0, "d4": 1, "d5": 3}
    grades_b = {"d1": 3, "d2": 0, "d3": 1, "d4": 2, "d5": 3}
    for turn in turns:
        for pid in grades_a:
            RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=pid, grade=grades_a[pid])
            RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=pid, grade=grades_b[pid])
    orders = {
        "run-a": ["d1", "d2", "d3", "d4", "d5"],
        "run-b": ["d5", "d4", "d3", "d2", "d1"],
        "run-c": ["d3", "d2", "d4", "d1", "d5"],
    }
    for name, order in orders.items():
        run = RunFactory(collection=collection, name=name)
        for turn in turns:
            RankingFactory(run=run, turn=turn, passage_ids=order)
    for name in ("resp-1", "resp-2"):
        run = RunFactory(collection=collection, name=name)
        for turn in turns:
            ResponseFactory(run=run, turn=turn)
            RankingFactory(run=run, turn=turn, passage_ids=[])
    return collection, a, b


def test_it_ranks_only_runs_with_a_ranking_in_the_rank_agreement_command(ranked_and_response_only):
    collection, a, b = ranked_and_response_only
    out = StringIO()

    call_command(
        "rank_agreement",
        *("--collection", collection.name, "--measure", "ndcg@5", "--judges", a.name, b.name),
        *("--format", "json"),
        stdout=out,
    )

    report = json.loads(out.getvalue())
    assert report["n_runs"] == 3
    assert sorted(row["run"] for row in report["runs"]) == ["run-a", "run-b", "run-c"]
    assert report["left_out"] == [
        {"run": "resp-1", "reason": "without a ranking"},
        {"run": "resp-2", "reason": "without a ranking"},
    ]
    assert "2 runs without a ranking left out." in report["notes"]


def test_it_says_on_the_ranking_page_how_many_runs_were_left_out(client, ranked_and_response_only):
    collection, a, b = ranked_and_response_only
    client.force_login(OrganiserFactory())

    response = client.get(
        reverse("judging:agreement-ranking", args=[collection.name]),
        {"measure": "ndcg@5", "a": a.name, "b": b.name},
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert "over 3 runs" in page
    assert "2 runs without a ranking left out." in page
    assert "resp-1" not in page


def test_it_leaves_unranked_runs_out_of_the_campaign_reports_rank_correlation(ranked_and_response_only):
    collection, _a, _b = ranked_and_response_only

    report = campaign_report(collection=collection, resamples=10)

    relevance = report["sections"][0]
    assert relevance["measure"] == "ndcg@5"
    (row,) = relevance["rows"]
    assert row["rank"]["n_runs"] == 3
    assert row["rank"]["left_out"] == 2


def _texts(svg: str) -> list[str]:
    # matplotlib draws text as paths and keeps each string in a comment beside them.
    return re.findall(r"<!-- (.*?) -->", svg)


def test_the_scatter_gives_runs_on_one_point_one_label():
    runs = [{"run": f"tied-{i}", "score_a": 0.25, "score_b": 0.25} for i in range(5)]
    runs.append({"run": "alone", "score_a": 0.7, "score_b": 0.5})
    report = {
        "runs": runs,
        "judges": ["nist", "gpt"],
        "measure": "ndcg@5",
        "kendall_tau_b": None,
        "spearman_rho": None,
        "n_runs": 6,
        "left_out": [{"run": "resp", "reason": "without a ranking"}],
    }

    texts = _texts(ranking_scatter(report, "svg").decode())

    assert "tied-0 + 4 more" in texts
    assert "alone" in texts
    assert not any(t in texts for t in ("tied-1", "tied-2", "tied-3", "tied-4"))
    assert "tau-b n/a, rho n/a, 6 runs (1 left out)" in texts


def test_the_scatter_moves_up_the_label_of_a_point_next_to_another():
    labels = scatter_labels(
        [
            {"run": "x", "score_a": 0.300, "score_b": 0.300},
            {"run": "y", "score_a": 0.301, "score_b": 0.301},
            {"run": "far", "score_a": 0.900, "score_b": 0.100},
        ]
    )

    offsets = {text: offset for _x, _y, text, offset in labels}
    assert offsets["x"] != offsets["y"]
    assert offsets["far"] == 3
