"""A hybrid estimate survives its stored JSON (keys sorted, as PostgreSQL stores them): the pages draw
from the rebuilt one what the computed one says, runs in the same order."""

import json
import math

import pytest

from annotation.models import Judge
from judging.hybrid.estimate import hybrid_estimate
from judging.hybrid.reports import estimate_json, estimate_of
from judging.hybrid.units import unit_table
from judging.measures.hybrid.coverage import Coverage
from judging.measures.hybrid.estimate import HybridEstimate
from judging.measures.hybrid.estimators import Estimate

pytestmark = pytest.mark.django_db


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

    stored = json.loads(json.dumps(estimate_json(computed), allow_nan=False, sort_keys=True))
    rebuilt = estimate_of(stored)

    assert computed.pairs and computed.rank_agreement is not None
    assert rebuilt.as_json() == computed.as_json()
    assert list(rebuilt.runs) == list(computed.runs)
    assert rebuilt.ranking() == computed.ranking()
    assert rebuilt.warnings == computed.warnings


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

    stored = json.loads(json.dumps(estimate_json(computed), allow_nan=False, sort_keys=True))
    rebuilt = estimate_of(stored)

    assert math.isnan(rebuilt.runs["r"].effective_n)
    assert rebuilt.coverage == computed.coverage
    assert rebuilt.as_json() == computed.as_json()
