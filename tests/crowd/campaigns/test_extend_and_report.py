"""Re-publishing unresolved pairs, generated test questions, and the report's agreement figure."""

from __future__ import annotations

import io
import random
from collections import Counter

import pytest
from django.core.management import call_command
from django.test import override_settings

from crowd.campaigns import services
from crowd.campaigns.report import campaign_report
from crowd.models import CrowdCampaign, TestQuestion
from devtools.mturk_server import FakeMTurkServer
from tests.crowd.crowd_helpers import batch_answer, build_campaign

pytestmark = pytest.mark.django_db


def test_it_gives_unresolved_batches_more_assignments_on_mturk():
    with (
        FakeMTurkServer() as server,
        override_settings(MTURK_ENDPOINT_URL=server.url, MTURK_EXTERNAL_URL="https://testserver"),
    ):
        campaign = build_campaign()
        call_command("mturk_publish", campaign=campaign.name)
        tied, settled = campaign.batches.order_by("index")
        disputed = next(i for i in tied.items.order_by("position") if not i.is_test)
        for worker in ("WA", "WB"):
            batch_answer(
                tied,
                worker,
                lambda i, w=worker: i.test_question.answer if i.is_test else (w == "WA" or i != disputed),
            )
            batch_answer(settled, worker, lambda i: i.test_question.answer if i.is_test else True)
        out = io.StringIO()

        call_command("crowd_aggregate", campaign=campaign.name, extend=2, mturk=True, stdout=out)

        assert "1 unresolved" in out.getvalue()
        assert "1 batch extended by 2 assignments" in out.getvalue()
        tied.refresh_from_db()
        settled.refresh_from_db()
        assert (tied.max_assignments, settled.max_assignments) == (5, 3)
        assert server.state.hits[tied.hit_id]["MaxAssignments"] == 5
        assert server.state.hits[settled.hit_id]["MaxAssignments"] == 3
        extra = [p for op, p in server.state.calls if op == "CreateAdditionalAssignmentsForHIT"]
        assert extra == [
            {
                "HITId": tied.hit_id,
                "NumberOfAdditionalAssignments": 2,
                "UniqueRequestToken": extra[0]["UniqueRequestToken"],
            }
        ]


def test_it_generates_balanced_test_questions_with_obvious_answers():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, n_tests=2)
    responses = {item.response.text: item.response.turn.topic_id for item in _pairs(campaign)}

    made = services.test_questions_generate(campaign=campaign, count=6)

    assert Counter(q.answer for q in made) == Counter({True: 3, False: 3})
    for question in made:
        assert question.source == TestQuestion.Source.GENERATED and question.origin is not None
        assert question.nugget_text == question.origin.text
        if question.answer:
            # states the nugget word for word
            assert question.origin.text.rstrip(".") in question.response_text
        else:
            # a response of another conversation than the nugget's
            assert responses[question.response_text] != question.origin.turn.topic_id


def _pairs(campaign):
    return [
        item
        for batch in campaign.batches.all()
        for item in batch.items.select_related("response__turn")
        if not item.is_test
    ]


def _alpha_by_hand(units: list[list[bool]]) -> float:
    """Krippendorff's alpha, nominal, from its coincidence matrix (Krippendorff 2011, section C)."""
    coincidence: Counter[tuple[bool, bool]] = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    coincidence[a, b] += 1 / (m - 1)
    totals = Counter()
    for (a, _b), weight in coincidence.items():
        totals[a] += weight
    n = sum(totals.values())
    observed = sum(w for (a, b), w in coincidence.items() if a != b)
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b) / (n - 1)
    return 1 - observed / expected


def test_report_alpha_equals_krippendorff_over_passing_workers():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, batch_size=10, assignments=6)
    (batch,) = campaign.batches.all()
    rng = random.Random(5)
    ballots: dict[int, list[bool]] = {}
    for worker, fails in (("W1", False), ("W2", False), ("W3", False), ("W4", True)):

        def pick(item, fails=fails):
            if item.is_test:
                return item.test_question.answer != fails
            vote = rng.random() < 0.6
            if not fails:
                ballots.setdefault(item.id, []).append(vote)
            return vote

        batch_answer(batch, worker, pick)

    report = campaign_report(campaign=campaign)

    assert report.alpha == pytest.approx(_alpha_by_hand(list(ballots.values())))
