"""The budget page and its computations report widths per run: a run with the same value on every unit
(a run that ranks nothing) is named and left out of the means, and the plan says in a true sentence when
no budget reaches the target."""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Judge, RelevanceJudgment
from judging.hybrid.units import unit_table
from judging.measures.hybrid.planning import plan_budget
from judging.measures.hybrid.simulation import simulate
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)
from tests.judging.budget_page import budget_simulated
from tests.judging.helpers import report_page


def _varying(units: int, runs: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    truth = rng.random((runs, units))
    return truth, np.clip(truth + rng.normal(0, 0.1, (runs, units)), 0, 1)


def test_it_leaves_runs_with_nothing_to_estimate_out_of_the_mean_width_and_coverage():
    truth, machine = _varying(400, 3)
    zeros = np.zeros((1, 400))

    alone = simulate(truth=truth, machine=machine, budgets=[20, 50], repeats=50, seed=2)
    mixed = simulate(
        truth=np.vstack([truth, zeros]),
        machine=np.vstack([machine, zeros]),
        budgets=[20, 50],
        repeats=50,
        seed=2,
    )

    assert mixed.constant_runs == [3] and mixed.estimated_runs == 3 and mixed.runs == 4
    for budget in (20, 50):
        for method, figures in mixed.budgets[budget].items():
            same = alone.budgets[budget][method]
            assert figures.mean_width == pytest.approx(same.mean_width)
            assert figures.coverage == pytest.approx(same.coverage)
            # Identical labels on a sample do not prove the rest identical: the interval is not [0, 0].
            assert figures.run_widths[3] > 0.0
            assert figures.run_widths[:3] == pytest.approx(same.run_widths)
    assert mixed.as_json()["budgets"]["20"]["ppi++"]["run_widths"][3] > 0.0


def test_it_refuses_a_simulation_with_nothing_to_estimate():
    from judging.measures.hybrid.estimators import EstimationError

    with pytest.raises(EstimationError, match="nothing to estimate"):
        simulate(truth=np.zeros((2, 30)), machine=np.zeros((2, 30)), budgets=[10], repeats=10)


@pytest.fixture
def collection(db):
    """Two runs that rank passages on 12 turns and one response-only run that ranks none."""
    collection = CollectionFactory(name="budget-runs")
    human, machine = JudgeFactory(name="nist"), JudgeFactory(name="llm")
    runs = [RunFactory(collection=collection, name=n) for n in ("ranked-a", "ranked-b")]
    RunFactory(collection=collection, name="response-only")
    rows = []
    for t in range(12):
        turn = TurnFactory(topic=TopicFactory(collection=collection), position=1)
        for p in range(3):
            rows.append(RelevanceJudgment(judge=human, turn=turn, passage_id=f"d{t}{p}", grade=(t + p) % 5))
            rows.append(
                RelevanceJudgment(judge=machine, turn=turn, passage_id=f"d{t}{p}", grade=(t + 2 * p) % 5)
            )
        for i, run in enumerate(runs):
            ids = [f"d{t}{p}" for p in (range(3) if i else range(2, -1, -1))]
            RankingFactory(run=run, turn=turn, passage_ids=ids, scores=[3, 2, 1])
    RelevanceJudgment.objects.bulk_create(rows)
    return collection


def test_the_plan_says_when_no_budget_reaches_the_width(collection):
    from annotation.models import Judge

    table = unit_table(
        collection=collection,
        task="relevance",
        measure="nDCG@5",
        human=Judge.objects.get(name="nist"),
        machine=Judge.objects.get(name="llm"),
    )

    plan = plan_budget(table=table, target_width=0.0001, settle_share=1.0)

    data = plan.as_json()
    assert data["budget_for_width"] is None
    assert data["width_plan"] == (
        "no budget up to the 12 turns available makes every run's 95% interval at most 0.0001 wide in 80% of samples"
    )
    assert data["nothing_to_estimate"] == ["response-only"]
    assert set(data["runs"]) == {"ranked-a", "ranked-b"}
    reachable = plan_budget(table=table, target_width=5.0).as_json()
    assert (
        reachable["width_plan"]
        == f"every run's 95% interval at most 5 wide in 80% of samples: {reachable['budget_for_width']} turns in all "
        "(sized from the 90% upper bound of each run's variance, from a pilot of 12 turns: the spread of the "
        "pilot's variance puts it anywhere from 12 to 12 with 90% confidence)"
    )


def test_the_budget_page_shows_widths_per_run_and_a_true_plan(client, collection):
    client.force_login(OrganiserFactory())
    query = {
        "task": "relevance",
        "human_judge": "nist",
        "machine_judge": "llm",
        "measure": "nDCG@5",
        "budgets": "4 8",
        "repeats": "20",
        "target_width": "0.0001",
    }

    response = budget_simulated(client, collection.name, query)

    assert response.status_code == 200
    body = response.content.decode()
    assert "× 2 runs with something to estimate" in body
    assert 'id="hybrid-constant-runs"' in body
    table = body[
        body.index('id="hybrid-run-widths"') : body.index("</table>", body.index('id="hybrid-run-widths"'))
    ]
    assert table.count("<tr>") == 4  # the header and one row per run
    assert 'response-only</td>\n    <td colspan="2" class="muted">nothing to estimate' in table
    assert (
        "No budget up to the 12 turns available makes every run&#x27;s 95% interval at most 0.0001 wide in 80% of samples."
        in body
    )
    assert "more than the units available" not in body
    widths = response.context["run_rows"]
    simulation = response.context["simulation"]
    shown = [w for r in widths if not r["constant"] for w in r["widths"][:1]]
    assert simulation.budgets[4]["ppi++"].mean_width == pytest.approx(sum(shown) / len(shown))


def test_the_estimate_page_names_its_intervals_by_confidence_not_alpha(client, collection):
    client.force_login(OrganiserFactory())
    query = {"task": "relevance", "human_judge": "nist", "machine_judge": "llm", "measure": "nDCG@5"}

    response = report_page(client, reverse("judging:hybrid-estimate", args=[collection.name]), query)

    assert response.status_code == 200
    body = response.content.decode()
    assert "method <strong>ppi++</strong>, 95% intervals" in body
    assert "-level" not in body


def test_the_budget_page_and_simulate_budget_give_the_same_numbers(client, collection):
    machine, other = Judge.objects.get(name="llm"), JudgeFactory(name="llm-b")
    RelevanceJudgment.objects.bulk_create(
        RelevanceJudgment(
            judge=other,
            turn_id=j.turn_id,
            passage_id=j.passage_id,
            grade=(j.grade * 3) % 5,
        )
        for j in RelevanceJudgment.objects.filter(judge=machine)
    )
    client.force_login(OrganiserFactory())
    query = {
        "task": "relevance",
        "human_judge": "nist",
        "machine_judge": "llm",
        "measure": "nDCG@5",
        "budgets": "4 8 20",  # 20 is more than the 12 units
        "repeats": "20",
        "confidence_judge": "llm-b",
    }
    out = StringIO()

    page = budget_simulated(client, collection.name, query)
    call_command(
        "simulate_budget",
        *["--collection", collection.name, "--task", "relevance", "--measure", "nDCG@5"],
        *["--human-judge", "nist", "--machine-judge", "llm", "--confidence-judges", "llm-b"],
        *["--budgets", "4", "8", "20", "--repeats", "20", "--format", "json"],
        stdout=out,
    )

    assert page.status_code == 200
    assert "Budgets above the 12 fully labelled units left out: 20." in page.content.decode()
    command = json.loads(out.getvalue())
    shown = page.context["simulation"].as_json()
    assert set(shown["budgets"]) == {"4", "8"}
    assert shown["budgets"] == command["budgets"]
    assert command["left_out_budgets"] == [20]
    assert command["active_sampling"] == page.context["active_sampling"] == "uncertainty"


def test_a_methods_figures_do_not_depend_on_the_other_methods_asked(client, collection):
    client.force_login(OrganiserFactory())
    query = {
        "task": "relevance",
        "human_judge": "nist",
        "machine_judge": "llm",
        "budgets": "4 8",
        "repeats": "20",
    }
    out = StringIO()

    page = budget_simulated(client, collection.name, query)
    call_command(
        "simulate_budget",
        *["--collection", collection.name, "--task", "relevance", "--human-judge", "nist"],
        *["--machine-judge", "llm", "--budgets", "4", "8", "--repeats", "20", "--methods", "active"],
        *["--format", "json"],
        stdout=out,
    )

    assert page.status_code == 200
    shown = page.context["simulation"].as_json()["budgets"]
    command = json.loads(out.getvalue())["budgets"]
    assert {b: command[b]["active"] for b in command} == {b: shown[b]["active"] for b in shown}
