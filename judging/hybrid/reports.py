"""The hybrid estimate's reports: what a task worker computes (JSON) and the estimate the pages draw from it.

An estimate simulates its own coverage on the same data (`coverage.turn_coverage`: 200 drawn samples),
0.2-0.7 s at today's real size and more with the collection, too long for a request; the estimate page
and the evaluation page's panel validate their form in the request and read the estimate computed here
on the worker. The stored JSON is the estimate's dataclasses field by field (non-finite floats encoded),
rebuilt as the same `HybridEstimate`, so the pages draw it exactly as they drew the one computed in the
request.

A page reads the stored estimate without its pairs of runs (a track's 90 runs make 4,005 of them, read
and decoded for nothing): `summary`, written at compute time, holds what the pages show of the pairs,
the count settled and each run's rank with the ranks its order against is not settled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from annotation.models import Collection
from judging.hybrid.budget import json_decoded, json_encoded, params_resolved, table_for
from judging.hybrid.charts import fixed
from judging.hybrid.estimate import hybrid_estimate
from judging.hybrid.units import UnitsError, unit_table
from judging.measures.hybrid.coverage import Coverage
from judging.measures.hybrid.estimate import HybridEstimate
from judging.measures.hybrid.estimators import Estimate, EstimationError
from judging.measures.ranking import TauInterval
from judging.models import ReportResult
from judging.reports.store import report_parts
from judging.reports.tasks import Progress

# The estimate page's report, and the evaluation page's panel's (relevance by turn, no pairs); the
# version of their figures' shape and computation. Their fingerprint covers the tables a unit table of
# the task reads (`units.table_reads`).
HYBRID_ESTIMATE = "hybrid-estimate"
EVALUATION_ESTIMATE = "evaluation-estimate"
VERSION = 2

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
    in the estimate's order; and the `summary` the pages read in place of the pairs."""
    data = asdict(result)
    data["runs"] = list(data["runs"].items())
    data["skipped"] = list(data["skipped"].items())
    ranking = result.ranking()
    rank_of = {row["run"]: row["rank"] for row in ranking}
    data["summary"] = {
        "pairs": len(result.pairs),
        "settled": sum(p.settled for p in result.pairs),
        "ranking": [
            {"run": row["run"], "unsettled": rank_spans(rank_of[r] for r in row["unsettled_with"])}
            for row in ranking
        ],
    }
    return dict(json_encoded(data))


def rank_spans(ranks: Iterable[int]) -> list[list[int]]:
    """Ranks as [first, last] runs of consecutive ranks: the runs a run is not settled against sit mostly
    next to it in the ranking, so a row names them in a few spans where their names would grow with the
    square of the runs."""
    spans: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if spans and spans[-1][1] == rank - 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return spans


def spans_text(spans: list[list[int]]) -> str:
    """[[2, 5], [7, 7]] as "2–5, 7"."""
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in spans)


def _written(interval: Estimate) -> dict[str, str]:
    effective = interval.effective_n
    return {
        "estimate_text": fixed(interval.estimate),
        "interval_text": f"[{fixed(interval.lo)}, {fixed(interval.hi)}]",
        "effective_n_text": "–" if math.isnan(effective) else fixed(effective, 1),
    }


# The stored estimate's fields a page reads: all but the pairs.
_SHOWN = ("task", "measure", "unit", "method", "alpha", "design", "fpc", "notes", "runs", "skipped")
_SHOWN_OR_NONE = ("rank_agreement", "coverage", "summary")


@dataclass(frozen=True)
class EstimateShown:
    """What a page shows of a stored estimate: the estimate without its pairs (`result`), its runs best
    first (`ranking`: rank, run, estimate, interval, the ranks not settled against, and the figures
    written out for the table), and how many of the pairs of runs there are and how many Holm's procedure
    settles."""

    result: HybridEstimate
    ranking: list[dict[str, Any]]
    pairs: int
    settled: int


def estimate_shown(report: ReportResult) -> EstimateShown | str:
    """The estimate `estimate_json` stored in the done report, read in one query without its pairs; or
    why it could not be estimated (the stored `{"error": why}`)."""
    found = report_parts(report=report, parts={k: f"$.{k}" for k in (*_SHOWN, *_SHOWN_OR_NONE, "error")})
    if found["error"]:
        return str(found["error"][0])
    data = json_decoded({k: v[0] if v else None for k, v in found.items()})
    tau, coverage, summary = data["rank_agreement"], data["coverage"], data["summary"]
    result = HybridEstimate(
        **{k: data[k] for k in ("task", "measure", "unit", "method", "alpha", "design", "fpc", "notes")},
        runs={run: Estimate(**e) for run, e in data["runs"]},
        skipped=dict(data["skipped"]),
        rank_agreement=TauInterval(**tau) if tau is not None else None,
        coverage=Coverage(**coverage) if coverage is not None else None,
    )
    ranking = [
        {
            "rank": rank,
            "run": row["run"],
            "estimate": result.runs[row["run"]].estimate,
            "interval": result.runs[row["run"]],
            "unsettled": spans_text(row["unsettled"]),
            **_written(result.runs[row["run"]]),
        }
        for rank, row in enumerate(summary["ranking"], start=1)
    ]
    return EstimateShown(result=result, ranking=ranking, pairs=summary["pairs"], settled=summary["settled"])
