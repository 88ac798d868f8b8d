"""The quality dashboard and `quality_report`: two assessors with gold planted at 10%, one grading well
and one badly; their figures checked against sklearn and counts made here, and the page's access and
query budget."""

from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import AssessorPause
from annotation.relevance.services import NextKind, work_next
from judging.measures.quality import wilson_interval
from judging.quality.selectors import collection_quality
from tests.factories import OrganiserFactory, UserFactory
from tests.gold_campaign import gold_campaign, gold_pairs, walk

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reports_in_request")]

LABELS = [0, 1, 2, 3, 4]


def _pooled_grade(pair) -> int:
    turn_pk, passage_id = pair
    return (turn_pk + sum(map(ord, passage_id))) % 5


@pytest.fixture
def campaign():
    """`good` gives the gold grade and a fixed grade of the pair elsewhere; `bad` misses most gold and
    half the pooled pairs, and answers in a second."""
    good, bad = UserFactory(username="good"), UserFactory(username="bad")
    planted = gold_campaign(assessors=[good, bad], n_turns=10, n_passages=9, share=0.1, redundancy=2)
    gold = gold_pairs(planted.assignment)
    wrong_gold = sorted(gold)[:7]  # bad misses 7 of the 10 gold pairs by two grades

    def good_grade(pair):
        return gold[pair] if pair in gold else _pooled_grade(pair)

    def bad_grade(pair):
        if pair in gold:
            return (gold[pair] + 2) % 5 if pair in wrong_gold else gold[pair]
        return _pooled_grade(pair) if pair[1] < "doc5" else (_pooled_grade(pair) + 1) % 5

    good_walk = walk(good, planted.assignment, good_grade, time_spent_ms=12_000)
    bad_walk = walk(bad, planted.assignment, bad_grade, time_spent_ms=1_000)
    return planted, gold, {"good": good_walk, "bad": bad_walk}


def _expected(gold, walks, name):
    given = walks[name].given
    other = walks["bad" if name == "good" else "good"].given
    gold_mine = [given[pair] for pair in sorted(gold)]
    gold_true = [gold[pair] for pair in sorted(gold)]
    shared = sorted(pair for pair in given if pair not in gold and pair in other)
    exact = sum(a == b for a, b in zip(gold_mine, gold_true, strict=True))
    return {
        "gold_n": len(gold),
        "gold_exact": exact / len(gold),
        "gold_within_one": sum(abs(a - b) <= 1 for a, b in zip(gold_mine, gold_true, strict=True))
        / len(gold),
        "gold_binary": sum((a >= 2) == (b >= 2) for a, b in zip(gold_mine, gold_true, strict=True))
        / len(gold),
        "gold_kappa": cohen_kappa_score(gold_mine, gold_true, labels=LABELS),
        "agreement_kappa": cohen_kappa_score(
            [given[p] for p in shared], [other[p] for p in shared], labels=LABELS
        ),
        "agreement_weighted_kappa": cohen_kappa_score(
            [given[p] for p in shared], [other[p] for p in shared], labels=LABELS, weights="linear"
        ),
        "median_seconds": float(np.median(walks[name].seconds)),
        "exact_successes": exact,
    }


def test_quality_report_gives_each_assessors_gold_accuracy_exactly(campaign):
    planted, gold, walks = campaign
    assert len(gold) == 10
    # Gold made 10% of what each assessor was shown.
    assert len(walks["good"].shown) == 100 and len(walks["bad"].shown) == 100
    out = StringIO()

    call_command(
        "quality_report", collection=planted.assignment.pool.collection.name, format="json", stdout=out
    )

    report = json.loads(out.getvalue())["assessors"]
    assert set(report) == {"good", "bad"}
    for name in ("good", "bad"):
        expected = _expected(gold, walks, name)
        figures = report[name]
        for key in ("gold_n", "gold_exact", "gold_within_one", "gold_binary", "median_seconds"):
            assert figures[key] == pytest.approx(expected[key]), (name, key)
        for key in ("gold_kappa", "agreement_kappa", "agreement_weighted_kappa"):
            assert figures[key] == pytest.approx(expected[key]), (name, key)
        assert figures["gold_exact_interval"] == pytest.approx(
            list(wilson_interval(expected["exact_successes"], 10)), abs=1e-4
        )
        assert figures["judgments"] == 90
    assert report["good"]["gold_exact"] == 1.0
    assert report["bad"]["gold_exact"] == pytest.approx(0.3)
    assert report["good"]["flags"] == []
    assert set(report["bad"]["flags"]) >= {"gold-exact-low", "too-fast"}


def test_the_table_report_names_each_assessor(campaign):
    planted, _, _ = campaign
    out = StringIO()
    call_command("quality_report", collection=planted.assignment.pool.collection.name, stdout=out)
    text = out.getvalue()
    assert "good" in text and "bad" in text and "2 assessors" in text


def test_the_dashboard_shows_the_same_gold_accuracy(client, campaign):
    planted, gold, walks = campaign
    client.force_login(OrganiserFactory())

    page = client.get(reverse("judging:quality-dashboard", args=[planted.assignment.pool.collection.name]))

    assert page.status_code == 200
    rows = {a.username: a for a in page.context["assessors"]}
    for name in ("good", "bad"):
        expected = _expected(gold, walks, name)
        assert rows[name].gold_n == 10
        assert rows[name].gold_exact.value == pytest.approx(expected["gold_exact"])
        assert rows[name].agreement_kappa == pytest.approx(expected["agreement_kappa"])
    html = page.content.decode()
    assert 'id="assessor-bad"' in html and "gold-exact-low" in html
    assert 'id="pause-bad"' in html


def test_the_dashboard_is_for_organisers_only(client):
    planted = gold_campaign(assessors=[UserFactory()], redundancy=1, n_turns=2)
    url = reverse("judging:quality-dashboard", args=[planted.assignment.pool.collection.name])

    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    client.force_login(OrganiserFactory())
    assert client.get(url).status_code == 200
    assert client.get(reverse("judging:quality-dashboard", args=["no-such"])).status_code == 404


def test_the_pause_and_resume_endpoints_are_for_organisers_only(client):
    alice = UserFactory(username="alice")
    planted = gold_campaign(assessors=[alice], redundancy=1, n_turns=2)
    collection = planted.assignment.pool.collection
    pause = reverse("judging:quality-pause", args=[collection.name, "alice"])
    resume = reverse("judging:quality-resume", args=[collection.name, "alice"])

    assert client.post(pause).status_code == 302
    assert not AssessorPause.objects.exists()
    client.force_login(alice)  # the assessor themselves is not an organiser
    assert client.post(pause).status_code == 403
    assert not AssessorPause.objects.exists()

    client.force_login(OrganiserFactory())
    assert client.get(pause).status_code == 405
    assert client.post(pause).status_code == 302
    assert AssessorPause.objects.filter(collection=collection, user=alice).exists()
    assert work_next(user=alice, assignment_pk=planted.assignment.pk).kind is NextKind.NO_WORK
    page = client.get(reverse("judging:quality-dashboard", args=[collection.name]))
    assert 'id="resume-alice"' in page.content.decode()

    client.force_login(alice)
    assert client.post(resume).status_code == 403
    assert AssessorPause.objects.exists()
    client.force_login(OrganiserFactory())
    assert client.post(resume).status_code == 302
    assert not AssessorPause.objects.exists()
    assert work_next(user=alice, assignment_pk=planted.assignment.pk).kind is NextKind.PASSAGE
    assert client.post(reverse("judging:quality-pause", args=[collection.name, "nobody"])).status_code == 404


def _page_queries(client, collection) -> int:
    """The queries of a view once its stored report is computed (the first view computes it)."""
    client.get(reverse("judging:quality-dashboard", args=[collection.name]))
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse("judging:quality-dashboard", args=[collection.name])).status_code == 200
    return len(queries)


def test_the_dashboard_costs_the_same_queries_at_any_size(client, django_assert_num_queries):
    organiser = OrganiserFactory()
    small = gold_campaign(assessors=[UserFactory()], redundancy=1, n_turns=2, n_passages=4, share=0.2)
    walk(small.assignment.assessors.get(), small.assignment, lambda pair: 1)
    assessors = [UserFactory() for _ in range(4)]
    large = gold_campaign(assessors=assessors, redundancy=3, n_turns=8, n_passages=9, share=0.1)
    for user in assessors:
        walk(user, large.assignment, lambda pair: 2)
    client.force_login(organiser)
    budget = _page_queries(client, small.assignment.pool.collection)

    client.get(reverse("judging:quality-dashboard", args=[large.assignment.pool.collection.name]))
    with django_assert_num_queries(budget):
        client.get(reverse("judging:quality-dashboard", args=[large.assignment.pool.collection.name]))
    assert len(collection_quality(collection=large.assignment.pool.collection)) == 4
    assert budget <= 8


def test_pausing_from_the_dashboard_keeps_the_bars_it_showed(client):
    alice = UserFactory(username="alice")
    planted = gold_campaign(assessors=[alice], redundancy=1, n_turns=2)
    collection = planted.assignment.pool.collection
    client.force_login(OrganiserFactory())

    page = client.get(reverse("judging:quality-dashboard", args=[collection.name]), {"min_n": 3})
    answer = client.post(reverse("judging:quality-pause", args=[collection.name, "alice"]) + "?min_n=3")

    assert page.status_code == 200
    assert page.context["settings"].min_n == 3
    assert page.context["form"]["gold_bar"].value() == "0.6"  # the bars left out show their defaults
    assert answer.status_code == 302
    assert answer["Location"].endswith("?min_n=3")


def test_the_dashboard_shows_the_assessors_a_page_at_a_time_and_pausing_keeps_the_page(
    client, campaign, monkeypatch
):
    monkeypatch.setattr("judging.quality.views.ASSESSORS_PER_PAGE", 1)
    planted, _, _ = campaign
    collection = planted.assignment.pool.collection
    url = reverse("judging:quality-dashboard", args=[collection.name])
    client.force_login(OrganiserFactory())

    first, second = client.get(url), client.get(url, {"page": 2, "min_n": 3})
    paused = client.post(reverse("judging:quality-pause", args=[collection.name, "good"]) + "?min_n=3&page=2")

    # The stored rows are by username: bad, then good.
    assert [a.username for a in first.context["assessors"]] == ["bad"]
    assert [a.username for a in second.context["assessors"]] == ["good"]
    html = second.content.decode()
    assert 'id="quality-pages"' in html and "Assessors 2–2 of 2" in html
    assert 'id="assessor-bad"' not in html and 'id="drift-bad"' not in html
    assert paused.status_code == 302
    assert paused["Location"].endswith("?min_n=3&page=2")
