"""Every page's query count is fixed: it does not grow with the number of runs, pools, turns or judgments.

The pages are walked from the URL configuration (devtools/pagewalk.py), as an organiser and as an
assessor, on two collections built alike at two sizes. A page whose count grows with the data is one
that a real campaign makes slow (the home page once ran a join of five tables that took 40 s), so the
counts at both sizes must be equal and under MAX_QUERIES.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from devtools.pagewalk import SKIPPED, World, routes, walk
from devtools.realsize import Size, realsize_build
from tests.factories import OrganiserFactory

pytestmark = pytest.mark.django_db

SMALL = Size(
    topics=2,
    turns_per_topic=6,
    ranked_runs=2,
    answer_runs=1,
    depth=6,
    candidates=10,
    pools=2,
    assessors=3,
    campaigns=2,
    campaign_topics=1,
)
LARGE = Size(
    topics=4,
    turns_per_topic=5,
    ranked_runs=6,
    answer_runs=3,
    depth=15,
    candidates=25,
    pools=3,
    assessors=3,
    campaigns=2,
    campaign_topics=2,
)
# The two sizes differ in runs, pools, turns, passages and judgments, not in the number of assessors:
# the campaign report compares every pair of judges, so its work (not its queries) grows with the judges.
# The most any page makes is 18 (the work console); the campaign report, once 56 at real size, makes 16.
MAX_QUERIES = 20


def _walk(name: str, size: Size, organiser) -> dict[tuple[str, str], tuple[int, int]]:
    built = realsize_build(name=name, size=size)
    assessor = get_user_model().objects.get(username=f"{name}-assessor-01")
    world = World.of(built.collection, assessor)
    return {(r.route, r.who): (r.status, r.queries) for r in walk(world, organiser)}


@pytest.fixture
def walked():
    organiser = OrganiserFactory()
    return _walk("budget-small", SMALL, organiser), _walk("budget-large", LARGE, organiser)


def test_every_route_is_walked_or_skipped_with_a_reason():
    names = {r.name for r in routes()}
    assert set(SKIPPED) - names == set(), "routes skipped here that no longer exist"


def test_no_page_makes_more_queries_at_a_larger_size_or_more_than_the_budget(walked):
    small, large = walked
    assert small.keys() == large.keys()
    grown = {
        key: (small[key][1], large[key][1])
        for key in small
        if large[key][0] == 200 and large[key][1] != small[key][1]
    }
    assert grown == {}, "pages whose query count changes with the data: (small, large)"
    over = {key: large[key][1] for key in large if large[key][0] == 200 and large[key][1] > MAX_QUERIES}
    assert over == {}, f"pages over {MAX_QUERIES} queries"


def test_each_page_answers_its_reader(walked):
    _small, large = walked
    statuses = {key: status for key, (status, _) in large.items()}
    # The organiser reads every organiser page; the assessor reads their own work.
    for name in (
        "home",
        "console-collection",
        "console-pools",
        "judging:agreement-campaign",
        "crowd:campaign",
    ):
        assert statuses[(name, "organiser")] == 200, name
    for name in ("home", "relevance-queue", "relevance-passage", "support-unit", "nuggets-turn"):
        assert statuses[(name, "assessor")] == 200, name
    assert statuses[("console-collection", "assessor")] == 403
