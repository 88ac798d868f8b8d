"""Composing batches, scoring test questions, majority vote, and the worker pages' access rules."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import NtrJudgment
from crowd.aggregation.services import labels_aggregate
from crowd.answers.services import answers_from_fields, assignment_submit, worker_get_or_create
from crowd.campaigns.selectors import campaign_pairs
from crowd.errors import CrowdError
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign
from crowd.providers.links.selectors import link_token
from crowd.providers.mturk.client import parse_answer_xml
from devtools.mturk_server import answer_xml
from tests.crowd.crowd_helpers import batch_answer, build_campaign
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _layout(campaign: CrowdCampaign) -> list[list[tuple]]:
    return [
        [(i.response_id, i.nugget_id, i.test_question_id) for i in b.items.order_by("position")]
        for b in campaign.batches.order_by("index")
    ]


def test_it_cuts_pairs_into_batches_with_one_test_question_each():
    campaign = build_campaign(batch_size=4)
    pairs = campaign_pairs(campaign=campaign)
    assert len(pairs) == 2 * 3 + 2 * 2
    batches = _layout(campaign)
    assert [len(b) for b in batches] == [5, 5, 3]  # 4 + 1, 4 + 1, 2 + 1
    assert [sum(1 for *_, t in b if t) for b in batches] == [1, 1, 1]
    labelled = [(r, n) for b in batches for r, n, t in b if not t]
    assert sorted(labelled) == sorted((r.id, n.id) for r, n in pairs)


def test_it_gives_the_same_batches_for_the_same_seed():
    first = build_campaign(seed=3)
    second = build_campaign(seed=3)

    def shape(c):  # compare by texts, since the two campaigns have their own rows
        return [
            [(i.response_text, i.nugget_text) for i in b.items.order_by("position")]
            for b in c.batches.order_by("index")
        ]

    assert [len(b) for b in shape(first)] == [len(b) for b in shape(second)]
    positions = [[i.is_test for i in b.items.order_by("position")] for b in first.batches.order_by("index")]
    assert positions == [
        [i.is_test for i in b.items.order_by("position")] for b in second.batches.order_by("index")
    ]
    # Same shuffle: the k-th pair of the stable order lands at the same place.
    order = {(r.id, n.id): k for k, (r, n) in enumerate(campaign_pairs(campaign=first))}
    order2 = {(r.id, n.id): k for k, (r, n) in enumerate(campaign_pairs(campaign=second))}
    assert [[order[(r, n)] for r, n, t in b if not t] for b in _layout(first)] == [
        [order2[(r, n)] for r, n, t in b if not t] for b in _layout(second)
    ]


def test_it_places_tests_at_seeded_positions_that_differ_across_seeds():
    spots = set()
    for seed in range(6):
        campaign = build_campaign(seed=seed, batch_size=10)
        (batch,) = campaign.batches.all()
        spots.add(next(i.position for i in batch.items.all() if i.is_test))
    assert len(spots) > 1


def test_it_balances_yes_and_no_test_questions():
    campaign = build_campaign(batch_size=1)  # ten batches, ten tests
    answers = Counter(
        i.test_question.answer
        for b in campaign.batches.all()
        for i in b.items.select_related("test_question")
        if i.is_test
    )
    assert answers == Counter({True: 5, False: 5})


def test_it_refuses_to_compose_without_yes_and_no_tests():
    with pytest.raises(CrowdError):
        build_campaign(n_tests=1)


def test_it_parses_answer_xml_and_rejects_a_missing_answer():
    fields = parse_answer_xml(answer_xml({"q1": "yes", "q2": "no", "ms1": "1200"}))
    assert fields == {"q1": "yes", "q2": "no", "ms1": "1200"}
    assert answers_from_fields(fields, size=2) == ({0: True, 1: False}, {0: 1200})
    with pytest.raises(CrowdError):
        answers_from_fields({"q1": "yes"}, size=2)
    with pytest.raises(CrowdError):
        answers_from_fields({"q1": "maybe", "q2": "no"}, size=2)


def test_majority_vote_matches_an_independent_count_and_ignores_failed_workers():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10, assignments=5)
    (batch,) = campaign.batches.all()
    rng = random.Random(11)
    ballots = {}
    for w in range(5):
        fail = w == 4
        votes = {}

        def pick(item, votes=votes, fail=fail):
            if item.is_test:
                return item.test_question.answer != fail
            votes[item.id] = rng.random() < 0.6
            return votes[item.id]

        batch_answer(batch, f"W{w}", pick)
        if not fail:
            ballots[f"W{w}"] = votes
    result = labels_aggregate(campaign=campaign)
    expected, unresolved = {}, set()
    for item in batch.items.filter(test_question__isnull=True):
        yes = sum(b[item.id] for b in ballots.values())
        no = len(ballots) - yes
        if yes == no:
            unresolved.add(item.id)
        else:
            expected[(item.response_id, item.nugget_id)] = yes > no
    assert {i.id for i in result.unresolved} == unresolved
    assert result.discarded_assignments == 1
    labels = {
        (j.response_id, j.nugget_id): j.matched
        for j in NtrJudgment.objects.filter(judge=campaign.label_judge)
    }
    assert labels == expected
    # Aggregating again changes nothing.
    labels_aggregate(campaign=campaign)
    assert NtrJudgment.objects.filter(judge=campaign.label_judge).count() == len(expected)


def test_it_reports_a_tie_as_unresolved_and_stores_no_label():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    (batch,) = campaign.batches.all()
    batch_answer(batch, "A", lambda i: i.test_question.answer if i.is_test else True)
    batch_answer(batch, "B", lambda i: i.test_question.answer if i.is_test else False)
    result = labels_aggregate(campaign=campaign)
    assert len(result.unresolved) == 10
    assert not NtrJudgment.objects.filter(judge=campaign.label_judge).exists()


def test_resubmitting_the_same_assignment_adds_no_rows():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    (batch,) = campaign.batches.all()
    worker = worker_get_or_create(worker_id="W")
    answers = {i.position: True for i in batch.items.all()}
    first = assignment_submit(batch=batch, worker=worker, answers=answers, assignment_id="A1")
    again = assignment_submit(batch=batch, worker=worker, answers=answers, assignment_id="A1")
    assert first.id == again.id
    assert CrowdAnswer.objects.filter(assignment=first).count() == 11
    with pytest.raises(CrowdError):
        assignment_submit(batch=batch, worker=worker, answers=answers, assignment_id="A2")


# --- pages -----------------------------------------------------------------------------------------


def _post_all(client, url, batch, value="yes"):
    return client.post(url, {f"q{n}": value for n in range(1, batch.items.count() + 1)})


def test_batch_page_sends_anonymous_users_to_login(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    response = client.get(reverse("crowd:batch-take", args=[batch.id]))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_batch_page_stores_answers_of_the_logged_in_worker_once(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    user, other = UserFactory(), UserFactory()
    url = reverse("crowd:batch-take", args=[batch.id])
    client.force_login(user)
    assert client.get(reverse("crowd:home")).context["next_batch"] == batch
    response = _post_all(client, url, batch)
    assert response.status_code == 302
    assert CrowdAssignment.objects.get().worker.user == user
    # The same worker cannot answer again; another worker can, and sees only their own work.
    again = client.get(url)
    assert again.status_code == 302
    assert client.get(reverse("crowd:home")).context["next_batch"] is None
    client.force_login(other)
    assert client.get(url).status_code == 200
    assert _post_all(client, url, batch, "no").status_code == 302
    assert CrowdAssignment.objects.count() == 2


def test_batch_page_answers_400_with_the_reason_for_missing_answers(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    client.force_login(UserFactory())
    response = client.post(reverse("crowd:batch-take", args=[batch.id]), {"q1": "yes"})
    assert response.status_code == 400
    assert b"question 2 has no answer" in response.content
    assert not CrowdAssignment.objects.exists()


def test_anonymous_link_works_and_a_tampered_one_does_not(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    token = link_token(batch=batch, label="anon-1")
    url = reverse("crowd:link-take", args=[token])
    assert client.get(url).status_code == 200
    assert client.get(reverse("crowd:link-take", args=[token[:-2] + "xx"])).status_code == 404
    assert _post_all(client, url, batch).status_code == 200
    assert CrowdAssignment.objects.get().worker.worker_id == "link:anon-1"
    # Opened again after submitting: the work is done, so the page thanks rather than answering 410.
    again = client.get(url)
    assert again.status_code == 200
    assert "already answered this batch: your answers are saved" in again.content.decode()
    assert CrowdAssignment.objects.count() == 1


def test_worker_page_escapes_collection_text(client):
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10)
    batch = campaign.batches.get()
    item = batch.items.filter(test_question__isnull=True).first()
    item.nugget.text = "<script>alert(1)</script>"
    item.nugget.save()
    client.force_login(UserFactory())
    html = client.get(reverse("crowd:batch-take", args=[batch.id])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_hit_page_refuses_a_submit_target_outside_mturk(client, settings):
    settings.MTURK_ENDPOINT_URL = ""
    campaign = build_campaign(batch_size=10)
    batch = campaign.batches.get()
    from crowd.providers.mturk.selectors import hit_token

    url = reverse("crowd:hit", args=[hit_token(batch=batch)])
    query = {"assignmentId": "A1", "hitId": "", "workerId": "W1", "turkSubmitTo": "https://evil.example"}
    response = client.get(url, query)
    assert response.status_code == 400
    query["turkSubmitTo"] = "https://workersandbox.mturk.com"
    assert client.get(url, query).status_code == 200


def test_compose_command_builds_batches_and_rejects_unknown_runs():
    campaign = build_campaign(batch_size=10)
    collection = campaign.collection
    call_command(
        "crowd_compose",
        campaign="second",
        collection=collection.name,
        nugget_judge=campaign.nugget_judge.name,
        runs="run-a",
        batch_size=3,
    )
    second = CrowdCampaign.objects.get(name="second")
    assert [b.items.count() for b in second.batches.order_by("index")] == [4, 3]  # 5 pairs: 3 + 1, 2 + 1
    with pytest.raises(CommandError, match="unknown runs"):
        call_command(
            "crowd_compose",
            campaign="third",
            collection=collection.name,
            nugget_judge=campaign.nugget_judge.name,
            runs="nope",
        )


def test_campaign_report_page_is_for_organisers_only(client):
    from tests.factories import OrganiserFactory

    campaign = build_campaign(batch_size=10)
    url = reverse("crowd:campaign", args=[campaign.name])
    assert client.get(url).status_code == 302
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    client.force_login(OrganiserFactory())
    response = client.get(url)
    assert response.status_code == 200
    assert response.context["report"].batches[0].max_assignments == campaign.assignments_per_batch
