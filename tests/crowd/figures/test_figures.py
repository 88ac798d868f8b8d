"""The campaign page's kept figures (crowd/figures) against a count of the tables in Python, after every kind
of write: answers submitted, provisional answers confirmed, assignments rejected, reassigned, given a
bonus, deleted, batches extended and expired, a campaign deleted, a table truncated."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import krippendorff
import numpy as np
import pytest
from django.db import connection

from annotation.models import NuggetSupport
from crowd.answers.services import assignment_confirm, assignment_provisional_store, worker_get_or_create
from crowd.campaigns.report import nominal_alpha
from crowd.figures.triggers import figures_install
from crowd.models import (
    VOTING_STATUSES,
    BatchFigures,
    CampaignFigures,
    CrowdAnswer,
    CrowdAssignment,
    CrowdCampaign,
    ItemVotes,
    VoteProfile,
    WorkerFigures,
)
from tests.crowd.crowd_helpers import (
    batch_answer,
    build_campaign,
    build_nugget_campaign,
    synthetic_crowd_answer,
)

pytestmark = pytest.mark.django_db

UNPAID = {CrowdAssignment.Status.ACCEPTED, CrowdAssignment.Status.REJECTED}


def _counted(campaign: CrowdCampaign) -> dict[str, object]:
    """What the page showed before the figures were kept, counted from the tables in Python."""
    batches, summary = {}, Counter()
    for batch in campaign.batches.all():
        rows = list(batch.assignments.all())
        submitted = sum(a.status in VOTING_STATUSES for a in rows)
        passed = sum(a.status in VOTING_STATUSES and a.passed_tests is True for a in rows)
        paid = [a for a in rows if a.status not in UNPAID]
        batches[batch.pk] = (
            batch.max_assignments,
            submitted,
            passed,
            sum(a.status == CrowdAssignment.Status.ACCEPTED for a in rows),
            len(paid),
            sum((a.bonus for a in paid), Decimal("0")),
        )
        if submitted >= batch.max_assignments:
            summary["complete" if passed == submitted else "full"] += 1
        else:
            summary["open" if batch.status in {"open", "published"} else "closed"] += 1
        summary["batches"] += 1
        summary["places"] += batch.max_assignments
        summary["answered"] += min(submitted, batch.max_assignments)
        summary["paid"] += len(paid)
    workers: dict[int, list[int]] = {}
    votes: dict[int, Counter[str]] = {}
    answers = CrowdAnswer.objects.filter(assignment__batch__campaign=campaign).select_related(
        "assignment", "item__test_question"
    )
    for assignment in CrowdAssignment.objects.filter(batch__campaign=campaign).exclude(status="Accepted"):
        workers.setdefault(assignment.worker_id, [0, 0, 0, 0])[0] += 1
    for answer in answers:
        a, item = answer.assignment, answer.item
        if a.status != "Accepted":
            row = workers[a.worker_id]
            row[1] += 1
            if item.is_test:
                q = item.test_question
                row[2] += 1
                row[3] += (q.answer == answer.matched) if not q.support else (q.support == answer.support)
        if not item.is_test and a.passed_tests and a.status in VOTING_STATUSES:
            key = (
                answer.support if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT else str(answer.matched)
            )
            votes.setdefault(item.pk, Counter())[key] += 1
    labels = (
        NuggetSupport.values if campaign.kind == CrowdCampaign.Kind.NUGGET_SUPPORT else ["False", "True", "-"]
    )
    profiles = Counter(tuple(c[label] for label in labels) for c in votes.values() if sum(c.values()) >= 2)
    summary = {key: value for key, value in summary.items() if value}
    return {"batches": batches, "summary": summary, "workers": workers, "profiles": dict(profiles)}


def _kept(campaign: CrowdCampaign) -> dict[str, object]:
    figures = CampaignFigures.objects.filter(campaign=campaign).first() or CampaignFigures()
    summary = {
        "batches": figures.batches,
        "complete": figures.batches_complete,
        "full": figures.batches_full,
        "open": figures.batches_open,
        "closed": figures.batches_closed,
        "places": figures.places,
        "answered": figures.answered,
        "paid": figures.paid,
    }
    return {
        "batches": {
            f.batch_id: (f.max_assignments, f.submitted, f.passed, f.accepted, f.paid, f.bonus)
            for f in BatchFigures.objects.filter(campaign_id=campaign.pk)
        },
        "summary": {key: value for key, value in summary.items() if value},
        "workers": {
            f.worker_id: [f.assignments, f.answers, f.tests, f.tests_right]
            for f in WorkerFigures.objects.filter(campaign_id=campaign.pk, assignments__gt=0)
        },
        "profiles": {
            (p.v0, p.v1, p.v2): p.units
            for p in VoteProfile.objects.filter(campaign_id=campaign.pk, units__gt=0)
        },
    }


def _check(campaign: CrowdCampaign) -> None:
    assert _kept(campaign) == _counted(campaign)


def _yes_no(worker: str, right: bool = True):
    def pick(item):
        if item.is_test:
            return item.test_question.answer == right
        return (item.position + len(worker)) % 2 == 0

    return pick


def test_the_figures_of_a_yes_no_campaign_match_a_recount_after_every_kind_of_write():
    campaign = build_campaign(provider=CrowdCampaign.Provider.MTURK, assignments=3)
    other = build_campaign(provider=CrowdCampaign.Provider.PLATFORM, assignments=2)
    batches = list(campaign.batches.order_by("index"))
    _check(campaign)

    for name in ("ann", "bob", "cat"):
        batch_answer(batches[0], name, _yes_no(name, right=name != "cat"))
    batch_answer(batches[1], "ann", _yes_no("ann"))
    batch_answer(other.batches.first(), "ann", _yes_no("ann"))
    _check(campaign)
    _check(other)
    assert _kept(campaign)["summary"]["full"] == 1 and _kept(campaign)["profiles"]

    # Provisional answers: counted per batch only, then confirmed by MTurk.
    answers = {item.position: True for item in batches[1].items.all()}
    assignment_provisional_store(batch=batches[1], worker_id="dan", assignment_id="A-DAN", answers=answers)
    _check(campaign)
    assert _kept(campaign)["batches"][batches[1].pk][3] == 1
    assignment_confirm(batch=batches[1], worker_id="dan", assignment_id="A-DAN", answers=answers)
    _check(campaign)

    # Rejected, approved with a bonus, reassigned to another worker and batch.
    CrowdAssignment.objects.filter(assignment_id="A-DAN").update(status=CrowdAssignment.Status.REJECTED)
    _check(campaign)
    CrowdAssignment.objects.filter(worker__worker_id="bob").update(status="Approved", bonus=Decimal("0.25"))
    _check(campaign)
    bob = CrowdAssignment.objects.get(worker__worker_id="bob")
    bob.worker = worker_get_or_create(worker_id="eve")
    bob.batch = batches[1]
    bob.save()
    _check(campaign)

    # An answer changed and one deleted; a batch extended and one expired.
    answer = CrowdAnswer.objects.filter(assignment__worker__worker_id="ann", item__test_question=None).first()
    CrowdAnswer.objects.filter(pk=answer.pk).update(matched=not answer.matched)
    _check(campaign)
    CrowdAnswer.objects.filter(assignment__worker__worker_id="ann", item__batch=batches[1]).first().delete()
    _check(campaign)
    campaign.batches.filter(pk=batches[0].pk).update(max_assignments=5)
    campaign.batches.filter(pk=batches[1].pk).update(status="expired", max_assignments=6)
    _check(campaign)

    # Whole assignments deleted, then the campaign: its figures go, the other campaign's stay.
    CrowdAssignment.objects.filter(worker__worker_id="cat").delete()
    _check(campaign)
    campaign_pk = campaign.pk
    campaign.delete()
    for model in (CampaignFigures, BatchFigures, WorkerFigures, ItemVotes, VoteProfile):
        assert not model.objects.filter(campaign_id=campaign_pk).exists()
    _check(other)


def test_the_figures_of_a_three_way_campaign_match_a_recount():
    campaign = build_nugget_campaign(assignments=3)
    synthetic_crowd_answer(campaign, workers={"w1": 0.9, "w2": 0.7, "w3": 0.8, "w4": "support"})
    _check(campaign)
    CrowdAssignment.objects.filter(worker__worker_id="w2").update(passed_tests=False)
    _check(campaign)


def test_a_truncate_and_a_reinstall_count_everything_again():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM)
    batch_answer(campaign.batches.first(), "ann", _yes_no("ann"))
    WorkerFigures.objects.update(answers=999)
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER assay_crowd_figures_answers_insert ON crowd_crowdanswer")

    assert figures_install() is True
    assert figures_install() is False
    _check(campaign)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE crowd_crowdanswer")
    _check(campaign)


@pytest.mark.parametrize("values", [2, 3])
def test_alpha_from_vote_profiles_equals_krippendorff_over_every_pair(values):
    rng = np.random.default_rng(values)
    counts = rng.integers(0, 4, size=(300, values))
    counts[:5] = 0
    profiles = Counter(tuple(int(v) for v in row) for row in counts)
    expected = krippendorff.alpha(
        value_counts=counts[counts.sum(axis=1) >= 2],
        value_domain=[float(i) for i in range(values)],
        level_of_measurement="nominal",
    )

    assert nominal_alpha(profiles.items()) == pytest.approx(expected, rel=1e-12)
    assert nominal_alpha([((3, 0), 10), ((0, 1), 4)]) is None
