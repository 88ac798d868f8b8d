"""The budget page's work, done by a task worker: the simulation of each budget (and the plan), stored as
JSON on a `BudgetSimulation` row, and the page's tables and charts rebuilt from that JSON.

Thousands of drawn samples over tens of thousands of units take seconds to minutes, too long for a
request; the stored figures are those the simulation computed (floats survive JSON exactly), so the page
shows them without computing anything again. `simulate_budget` prints the same figures
(`simulation_json` is its JSON output too).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

from annotation.models import Collection, Judge
from core.revisions import revisions_read
from judging.hybrid import charts
from judging.hybrid.estimate import sample_draw
from judging.hybrid.pair_simulation import pair_budget_simulate
from judging.hybrid.services import DEFAULT_MEASURE
from judging.hybrid.units import UnitsError, table_reads, unit_table
from judging.measures.hybrid.active import ActiveVerdict
from judging.measures.hybrid.figures import MethodFigures
from judging.measures.hybrid.planning import ASSURANCE, plan_budget
from judging.measures.hybrid.simulation import BudgetSimulation, SimulationResult, budget_simulate
from judging.measures.hybrid.table import UnitTable
from judging.models import HumanSample

# Samples drawn per budget, on the page and in `simulate_budget` alike.
DEFAULT_REPEATS = 500

JUDGE_FIELDS = ("human_judge", "machine_judge", "confidence_judge", "gold_judge")


def budget_params(data: dict[str, Any]) -> dict[str, Any]:
    """The budget form's cleaned data as JSON: judges and the sample by name, budgets as a list."""
    named = ("machine_judge", "confidence_judge", "gold_judge", "sample")
    params = {k: v for k, v in data.items() if k not in (*named, "human_judge")}
    params.update({k: data[k].name if data.get(k) is not None else None for k in named})
    params["human_judge"] = sorted(j.name for j in data["human_judge"])
    params["design"] = data.get("design") or "default"
    return params


def params_key(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def form_initial(params: dict[str, Any]) -> dict[str, Any]:
    """The budget form's initial values that ask for `params` again."""
    return {**params, "budgets": " ".join(map(str, params["budgets"]))}


def labels_fingerprint(*, collection: Collection, params: dict[str, Any]) -> str:
    """A digest of what the simulation reads, by the rule every stored report follows: the revisions of
    the tables a unit table of the task reads (`units.table_reads`: the labels, the judges, the runs and
    their rankings, the samples; core/revisions.py), which PostgreSQL moves on every write, and the
    collection. One query. Revisions are per table: a label written in another collection also makes the
    next simulation of the same choices run again (never stale; sometimes run needlessly)."""
    revisions = revisions_read(models=table_reads(params["task"]))
    return hashlib.sha256(json.dumps([collection.pk, sorted(revisions.items())]).encode()).hexdigest()


def table_for(collection: Collection, data: dict[str, Any], human: Any = None) -> UnitTable:
    """The unit table of the form's choices (`human` replaces the human judges: a confidence judge)."""
    return unit_table(
        collection=collection,
        task=data["task"],
        measure=data["measure"] or DEFAULT_MEASURE[data["task"]],
        human=human or data["human_judge"],
        machine=data["machine_judge"],
        unit=data["unit"],
        rel_threshold=data["rel_threshold"],
        gold=data["gold_judge"],
    )


def _pairs(collection: Collection, data: dict[str, Any]) -> BudgetSimulation:

    return pair_budget_simulate(
        collection=collection,
        human=list(data["human_judge"]),
        machine=data["machine_judge"],
        measure=data["measure"] or DEFAULT_MEASURE["relevance"],
        budgets=data["budgets"],
        repeats=data["repeats"],
        alpha=data["alpha"],
        design=data["design"],
    )


# The pair designs of the form's `design` choice, each simulated by its own function; "default" (and
# every turn unit) goes to `budget_simulate`. A new design is one line here and one choice in the form.
PAIR_DESIGNS: dict[str, Callable[[Collection, dict[str, Any]], BudgetSimulation]] = {
    "stratified": _pairs,
    "two-stage": _pairs,
}


def _simulate(collection: Collection, data: dict[str, Any]) -> tuple[BudgetSimulation, UnitTable | None]:
    """The chosen design's simulation, and the unit table the plan reads (None: no plan for the design)."""

    design = PAIR_DESIGNS.get(data["design"]) if data["unit"] == "pair" else None
    if design is not None:
        return design(collection, data), None
    full = table_for(collection, data)
    confidence = data["confidence_judge"]
    outcome = budget_simulate(
        table=full,
        budgets=data["budgets"],
        repeats=data["repeats"],
        alpha=data["alpha"],
        confidence=[table_for(collection, data, human=confidence)] if confidence else [],
        fpc=data["fpc"],
    )
    return outcome, full


def params_resolved(collection: Collection, params: dict[str, Any]) -> dict[str, Any]:
    """`params` with judges and the sample as objects, as the form cleaned them; one that is gone since
    the simulation was asked is an error the page shows."""
    names = [*params["human_judge"], *(params[k] for k in JUDGE_FIELDS[1:] if params.get(k))]
    judges = Judge.objects.in_bulk(names, field_name="name")
    missing = [n for n in names if n not in judges]
    if missing:
        raise UnitsError(f"judge {', '.join(missing)} no longer exists")
    data = {**params, "human_judge": [judges[n] for n in params["human_judge"]]}
    data.update({k: judges[params[k]] if params.get(k) else None for k in JUDGE_FIELDS[1:]})
    data["sample"] = None
    if params.get("sample"):
        data["sample"] = HumanSample.objects.filter(collection=collection, name=params["sample"]).first()
        if data["sample"] is None:
            raise UnitsError(f"sample {params['sample']} no longer exists")
    return data


def simulation_json(outcome: BudgetSimulation) -> dict[str, Any]:
    """The simulation's figures as `simulate_budget --format json` prints them."""
    data = outcome.result.as_json()
    data["active_sampling"] = outcome.active_sampling
    data["left_out_budgets"] = outcome.left_out
    verdict = outcome.active_verdict
    data["active_verdict"] = verdict.as_dict() if verdict else None
    return data


def budget_compute(*, collection: Collection, params: dict[str, Any]) -> dict[str, Any]:
    """Simulate the budgets of `params` (and plan, when a target is given) on the collection as it is;
    the JSON the page is drawn from. Raises UnitsError or EstimationError as the page used to answer."""

    data = params_resolved(collection, params)
    outcome, full = _simulate(collection, data)
    plan = None
    if full is not None and (data["target_width"] or data["settle_share"]):
        plan = plan_budget(
            table=full,
            drawn=sample_draw(table=full, sample=data["sample"]).drawn,
            target_width=data["target_width"],
            settle_share=data["settle_share"],
            alpha=data["alpha"],
            fpc=data["fpc"],
            assurance=data["assurance"] or ASSURANCE,
        ).as_json()
    result = {
        **simulation_json(outcome),
        "run_names": outcome.table.runs,
        "table_units": outcome.table.size,
        "table_notes": outcome.table.notes,
        "plan": plan,
    }
    return json_encoded(result)


def json_encoded(value: Any) -> Any:
    """JSON has no NaN or infinity (PostgreSQL refuses them): such floats are stored as {"float": "nan"}."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}
    if isinstance(value, dict):
        return {k: json_encoded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_encoded(v) for v in value]
    return value


def json_decoded(value: Any) -> Any:
    """The value `json_encoded` stored, its non-finite floats back."""
    if isinstance(value, dict):
        if value.keys() == {"float"}:
            return float(value["float"])
        return {k: json_decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_decoded(v) for v in value]
    return value


def _simulation_result(data: dict[str, Any]) -> SimulationResult:
    budgets = {
        int(b): {
            m: MethodFigures(**{k: v for k, v in f.items() if k != "mc_error"}) for m, f in methods.items()
        }
        for b, methods in data["budgets"].items()
    }
    return SimulationResult(
        units=data["units"],
        runs=data["runs"],
        repeats=data["repeats"],
        alpha=data["alpha"],
        seed=data["seed"],
        budgets=budgets,
        constant_runs=data["constant_runs"],
        fpc=data["fpc"],
        warnings={int(b): w for b, w in data["warnings"].items()},
    )


def _verdict(data: dict[str, Any] | None) -> ActiveVerdict | None:
    if data is None:
        return None
    ratios = {int(b): r for b, r in data["width_ratio_to_ppi++"].items()}
    return ActiveVerdict(
        pays=data["pays"], budgets=data["budgets"], width_ratio=ratios, sentence=data["verdict"]
    )


def budget_shown(*, stored: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The budget page's context for a finished simulation, from its stored JSON alone."""
    data = json_decoded(stored)
    simulation = _simulation_result(data)
    plan = data["plan"]
    methods = list(next(iter(simulation.budgets.values())))
    rows = [
        {"budget": b, "figures": [(m, simulation.budgets[b][m]) for m in methods]} for b in simulation.budgets
    ]
    coverage = {
        m: [(float(b), simulation.budgets[b][m].coverage) for b in simulation.budgets] for m in methods
    }
    width = {
        m: [(float(b), simulation.budgets[b][m].mean_width) for b in simulation.budgets] for m in methods
    }
    top = max(v for pts in width.values() for _b, v in pts)
    nominal = 1 - params["alpha"]
    runs = data["run_names"]
    return {
        "simulation": simulation,
        "rows": rows,
        "run_rows": _run_widths(
            runs, simulation, params["method"] if params["method"] in methods else methods[-1], plan
        ),
        "constant_runs": [runs[i] for i in simulation.constant_runs],
        "confidence": f"{100 * nominal:g}%",
        "units": data["table_units"],
        # Simulations stored before the notes were kept have none.
        "table_notes": data.get("table_notes", []),
        "fpc": params["fpc"],
        "coverage_chart": charts.lines(
            coverage,
            y_min=max(0.0, nominal - 0.15),
            y_max=1.0,
            marks=(nominal - 0.02, nominal, nominal + 0.02),
        ),
        "width_chart": charts.lines(width, y_min=0.0, y_max=top * 1.05 or 1.0),
        "plan": plan,
        "active_sampling": data["active_sampling"],
        "active_verdict": _verdict(data["active_verdict"]),
        "left_out_budgets": data["left_out_budgets"],
    }


def _run_widths(
    runs: list[str], simulation: SimulationResult, method: str, plan: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """One row per run: its simulated mean width at each budget under `method`, and its plan if there is one;
    runs with nothing to estimate are marked instead of showing widths of 0."""
    constant = set(simulation.constant_runs)
    plans = plan["runs"] if plan else {}
    return [
        {
            "run": run,
            "constant": i in constant,
            "widths": [simulation.budgets[b][method].run_widths[i] for b in simulation.budgets],
            "plan": plans.get(run),
        }
        for i, run in enumerate(runs)
    ]
