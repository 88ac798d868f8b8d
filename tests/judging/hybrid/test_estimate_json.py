"""A hybrid estimate survives its stored JSON (stored in a report, so with keys sorted as PostgreSQL
stores them): the pages draw from what they read of it, without its pairs, what the computed one says,
runs in the same order."""

import json
import math
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Collection, Judge
from judging.hybrid.estimate import hybrid_estimate
from judging.hybrid.reports import EstimateShown, estimate_json, estimate_shown, rank_spans
from judging.hybrid.units import unit_table
from judging.measures.hybrid.coverage import Coverage
from judging.measures.hybrid.estimate import HybridEstimate
from judging.measures.hybrid.estimators import Estimate
from judging.models import ReportResult
from tests.factories import CollectionFactory

pytestmark = pytest.mark.django_db


def _stored(collection: Collection, result: dict[str, Any]) -> ReportResult:
    """A done report holding `result`, its figures left in the database as the pages ask for it."""
    row = ReportResult.objects.create(
        kind="hybrid-estimate",
        key="k",
        params_key="p",
        collection=collection,
        compute="judging.hybrid.reports.hybrid_estimate_compute",
        status=ReportResult.Status.DONE,
        result=result,
    )
    return ReportResult.objects.defer("result").get(pk=row.pk)


def _shown(collection: Collection, computed: HybridEstimate) -> EstimateShown:
    stored = json.loads(json.dumps(estimate_json(computed), allow_nan=False))
    shown = estimate_shown(_stored(collection, stored))
    assert isinstance(shown, EstimateShown)
    return shown


def test_the_estimate_rebuilt_from_its_json_says_what_the_computed_one_says(views_collection):
    judges = Judge.objects.in_bulk(["nist", "llm"], field_name="name")
    table = unit_table(
        collection=views_collection,
        task="relevance",
        measure="nDCG@5",
        human=judges["nist"],
        machine=judges["llm"],
    )
    computed = hybrid_estimate(table=table, method="ppi++")

    row = _stored(views_collection, json.loads(json.dumps(estimate_json(computed), allow_nan=False)))
    with CaptureQueriesContext(connection) as queries:
        shown = estimate_shown(row)
    assert isinstance(shown, EstimateShown)
    rebuilt = shown.result

    assert computed.pairs and computed.rank_agreement is not None
    assert len(queries) == 1  # the figures a page shows, read in one query
    assert rebuilt.pairs == []
    assert {**rebuilt.as_json(), "pairs": [], "ranking": [], "settled_share": None} == {
        **computed.as_json(),
        "pairs": [],
        "ranking": [],
        "settled_share": None,
    }
    assert list(rebuilt.runs) == list(computed.runs)
    assert rebuilt.warnings == computed.warnings
    assert (shown.pairs, shown.settled) == (len(computed.pairs), sum(p.settled for p in computed.pairs))
    ranking = computed.ranking()
    rank_of = {row["run"]: row["rank"] for row in ranking}
    assert [(r["rank"], r["run"], r["estimate"]) for r in shown.ranking] == [
        (r["rank"], r["run"], r["estimate"]) for r in ranking
    ]
    assert [r["interval"] for r in shown.ranking] == [computed.runs[r["run"]] for r in ranking]
    for row, computed_row in zip(shown.ranking, ranking, strict=True):
        assert _ranks(row["unsettled"]) == sorted(rank_of[run] for run in computed_row["unsettled_with"])


def _ranks(text: str) -> list[int]:
    """The ranks "2–5, 7" names."""
    ranks: list[int] = []
    for span in filter(None, text.split(", ")):
        first, _, last = span.partition("–")
        ranks.extend(range(int(first), int(last or first) + 1))
    return ranks


def test_the_ranks_not_settled_against_are_named_in_spans_of_consecutive_ranks():
    assert rank_spans([7, 2, 3, 4, 5, 9, 10]) == [[2, 5], [7, 7], [9, 10]]
    assert rank_spans([]) == []


def test_a_stored_error_is_read_as_why_nothing_was_estimated():
    assert estimate_shown(_stored(CollectionFactory(), {"error": "no labels"})) == "no labels"


def test_non_finite_figures_are_stored_as_json_can_hold_them_and_come_back():
    nan = float("nan")
    estimate = Estimate(
        estimate=0.5, lo=0.1, hi=0.9, se=0.2, lam=1.0, n_human=3, n_machine=9, effective_n=nan
    )
    computed = HybridEstimate(
        task="relevance",
        measure="P@5",
        unit="pair",
        method="ppi++",
        alpha=0.05,
        design="d",
        runs={"r": estimate},
        coverage=Coverage(worst=math.inf, mean=0.9, repeats=10, how="h"),
    )

    rebuilt = _shown(CollectionFactory(), computed).result

    assert math.isnan(rebuilt.runs["r"].effective_n)
    assert rebuilt.coverage == computed.coverage
    assert rebuilt.as_json() == computed.as_json()
