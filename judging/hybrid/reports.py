"""The hybrid estimate's reports: what a task worker computes (JSON) and the estimate the pages draw from it.

An estimate simulates its own coverage on the same data (`coverage.turn_coverage`: 200 drawn samples),
0.2-0.7 s at today's real size and more with the collection, too long for a request; the estimate page
and the evaluation page's panel validate their form in the request and read the estimate computed here
on the worker. The stored JSON is the estimate's dataclasses field by field (non-finite floats encoded),
rebuilt as the same `HybridEstimate`, so the pages draw it exactly as they drew the one computed in the
request.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from annotation.models import Collection
from judging.hybrid.budget import json_decoded, json_encoded, params_resolved, table_for
from judging.hybrid.estimate import hybrid_estimate
from judging.hybrid.units import UnitsError, unit_table
from judging.measures.hybrid.coverage import Coverage
from judging.measures.hybrid.estimate import HybridEstimate, PairDifference
from judging.measures.hybrid.estimators import Estimate, EstimationError
from judging.measures.ranking import TauInterval
from judging.reports.tasks import Progress

# The estimate page's report, and the evaluation page's panel's (relevance by turn, no pairs); the
# version of their figures' shape and computation. Their fingerprint covers the tables a unit table of
# the task reads (`units.table_reads`).
HYBRID_ESTIMATE = "hybrid-estimate"
EVALUATION_ESTIMATE = "evaluation-estimate"
VERSION = 1

ESTIMATE_FIELDS = ("task", "measure", "unit", "method", "alpha", "fpc", "rel_threshold")


def estimate_params(data: dict[str, Any]) -> dict[str, Any]:
    """The estimate form's cleaned data as JSON: judges and the sample by name, the human judges sorted."""
    params = {k: data[k] for k in ESTIMATE_FIELDS}
    params.update(
        {k: data[k].name if data.get(k) else None for k in ("machine_judge", "gold_judge", "sample")}
    )
    params["human_judge"] = sorted(j.name for j in data["human_judge"])
    return params


def panel_params(data: dict[str, Any]) -> dict[str, Any]:
    """The evaluation panel's cleaned data as JSON, named as `estimate_params` names them."""
    return {
        "measure": data["measure"],
        "method": data["method"],
        "human_judge": sorted(j.name for j in data["human_judge"]),
        "machine_judge": data["machine_judge"].name,
        "sample": data["sample"].name if data["sample"] is not None else None,
    }


def hybrid_estimate_compute(
    *, collection: Collection, params: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """Every run's estimate under the estimate page's choices, with its pairs and simulated coverage. What
    cannot be estimated (an unknown measure, a judge without labels here) is `{"error": why}`, which the
    page shows as it did when it estimated in the request."""
    try:
        data = params_resolved(collection, params)
        result = hybrid_estimate(
            table=table_for(collection, data),
            method=data["method"],
            alpha=data["alpha"],
            sample=data["sample"],
            fpc=data["fpc"],
        )
    except (UnitsError, EstimationError) as exc:
        return {"error": str(exc)}
    return estimate_json(result)


def evaluation_estimate_compute(
    *, collection: Collection, params: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """Every run's relevance estimate by turn under the evaluation panel's choices (no pairs), or
    `{"error": why}`."""
    try:
        data = params_resolved(collection, params)
        table = unit_table(
            collection=collection,
            task="relevance",
            measure=data["measure"],
            human=data["human_judge"],
            machine=data["machine_judge"],
        )
        result = hybrid_estimate(table=table, method=data["method"], sample=data["sample"], pairs=False)
    except (UnitsError, EstimationError) as exc:
        return {"error": str(exc)}
    return estimate_json(result)


def estimate_json(result: HybridEstimate) -> dict[str, Any]:
    """The estimate field by field, as JSON can hold it; the runs (and those skipped) as [run, ...] pairs,
    since a stored JSON object keeps no order (PostgreSQL's jsonb sorts keys) and the pages list the runs
    in the estimate's order."""
    data = asdict(result)
    data["runs"] = list(data["runs"].items())
    data["skipped"] = list(data["skipped"].items())
    return dict(json_encoded(data))


def estimate_of(stored: dict[str, Any]) -> HybridEstimate:
    """The estimate `estimate_json` stored (not an `{"error": why}` result)."""
    data = json_decoded(stored)
    tau, coverage = data["rank_agreement"], data["coverage"]
    return HybridEstimate(
        **{k: data[k] for k in ("task", "measure", "unit", "method", "alpha", "design", "fpc", "notes")},
        runs={run: Estimate(**e) for run, e in data["runs"]},
        skipped=dict(data["skipped"]),
        pairs=[PairDifference(**{**p, "estimate": Estimate(**p["estimate"])}) for p in data["pairs"]],
        rank_agreement=TauInterval(**tau) if tau is not None else None,
        coverage=Coverage(**coverage) if coverage is not None else None,
    )
