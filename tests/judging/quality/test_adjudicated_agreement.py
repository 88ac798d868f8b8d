"""Each assessor's agreement with an adjudicated judge, on the quality dashboard and in `quality_report`:
checked against sklearn on the pairs both graded, and the page's query budget with it."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import AdjudicationItem, Judge, RelevanceJudgment
from annotation.relevance.adjudication.rules import DisputeRule
from annotation.relevance.adjudication.services import adjudication_assign, adjudication_grade
from tests.factories import OrganiserFactory, UserFactory
from tests.gold_campaign import gold_campaign, gold_pairs, walk

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]

LABELS = [0, 1, 2, 3, 4]


def _grade(pair, shift: int) -> int:
    turn_pk, passage_id = pair
    return (turn_pk + sum(map(ord, passage_id)) + shift) % 5


def _adjudicated_campaign(assessors, **sizes):
    planted = gold_campaign(assessors=assessors, **sizes)
    walks = {
        user.username: walk(
            user, planted.assignment, lambda pair, i=i: _grade(pair, i * sum(map(ord, pair[1])) % 3)
        )
        for i, user in enumerate(assessors)
    }
    assigned = adjudication_assign(
        collection=planted.assignment.pool.collection,
        judges=list(Judge.objects.filter(user__in=assessors)),
        adjudicator=UserFactory(),
        name=f"adjudicated-{planted.assignment.pk}",
        rule=DisputeRule(min_difference=2),
    )
    for item in AdjudicationItem.objects.filter(adjudication=assigned.adjudication).select_related(
        "adjudication"
    ):
        adjudication_grade(item=item, grade=2)
    return planted, walks, assigned.adjudication.judge


def test_quality_report_gives_each_assessors_agreement_with_the_adjudicated_judge():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    planted, walks, judge = _adjudicated_campaign([alice, bob], n_turns=6, n_passages=6, redundancy=2)
    gold = gold_pairs(planted.assignment)
    reference = {
        (t, p): g
        for t, p, g in RelevanceJudgment.objects.filter(judge=judge).values_list(
            "turn_id", "passage_id", "grade"
        )
    }
    out = StringIO()

    call_command(
        "quality_report",
        collection=planted.assignment.pool.collection.name,
        format="json",
        adjudicated=judge.name,
        stdout=out,
    )

    report = json.loads(out.getvalue())["assessors"]
    for name in ("alice", "bob"):
        given = walks[name].given
        pairs = sorted(pair for pair in given if pair in reference and pair not in gold)
        mine, theirs = [given[p] for p in pairs], [reference[p] for p in pairs]
        assert report[name]["adjudicated_n"] == len(pairs) > 0
        assert report[name]["adjudicated_exact"] == pytest.approx(
            sum(a == b for a, b in zip(mine, theirs, strict=True)) / len(pairs)
        )
        assert report[name]["adjudicated_kappa"] == pytest.approx(
            cohen_kappa_score(mine, theirs, labels=LABELS)
        )


def test_the_report_leaves_the_adjudicated_keys_out_unless_asked():
    alice = UserFactory(username="alice")
    planted = gold_campaign(assessors=[alice], redundancy=1, n_turns=2)
    walk(alice, planted.assignment, lambda pair: 1)
    out = StringIO()

    call_command(
        "quality_report", collection=planted.assignment.pool.collection.name, format="json", stdout=out
    )

    assert "adjudicated_kappa" not in json.loads(out.getvalue())["assessors"]["alice"]


def _page_queries(client, collection, judge) -> tuple[int, str]:
    """The queries of a view once its stored report is computed (the first view computes it)."""
    url = reverse("judging:quality-dashboard", args=[collection.name])
    client.get(url, {"adjudicated": judge.name})
    with CaptureQueriesContext(connection) as queries:
        page = client.get(
            reverse("judging:quality-dashboard", args=[collection.name]), {"adjudicated": judge.name}
        )
    assert page.status_code == 200
    return len(queries), page.content.decode()


def test_the_dashboard_shows_the_agreement_with_the_same_queries_at_any_size(client):
    small, _, small_judge = _adjudicated_campaign(
        [UserFactory(), UserFactory()], redundancy=2, n_turns=2, n_passages=4, share=0.2
    )
    large, _, large_judge = _adjudicated_campaign(
        [UserFactory() for _ in range(4)], redundancy=3, n_turns=8, n_passages=9, share=0.1
    )
    client.force_login(OrganiserFactory())

    budget, html = _page_queries(client, small.assignment.pool.collection, small_judge)
    large_count, large_html = _page_queries(client, large.assignment.pool.collection, large_judge)

    assert large_count == budget <= 10
    assert f"κ with {large_judge.name}" in large_html and 'class="adjudicated-kappa"' in large_html
    assert f'<option value="{small_judge.name}" selected>' in html


def test_the_dashboard_refuses_a_judge_that_is_not_the_collections_adjudication(client):
    alice = UserFactory(username="alice")
    planted = gold_campaign(assessors=[alice], redundancy=1, n_turns=2)
    client.force_login(OrganiserFactory())

    page = client.get(
        reverse("judging:quality-dashboard", args=[planted.assignment.pool.collection.name]),
        {"adjudicated": planted.reference.name},
    )

    assert page.status_code == 400
