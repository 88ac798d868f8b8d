"""Each crowd worker's raw votes are NtR judgments of their own crowd judge, comparable by `agreement`."""

from __future__ import annotations

import json
import urllib.parse
from io import StringIO

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from sklearn.metrics import cohen_kappa_score

from annotation.models import Judge, NtrJudgment
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.errors import CrowdError
from crowd.models import CrowdCampaign
from tests.crowd.crowd_helpers import build_campaign, hidden_form
from tests.factories import JudgeFactory

pytestmark = pytest.mark.django_db


def _vote(worker: str, item) -> bool:
    """Independent of the code under test: each worker follows a fixed pattern over item ids."""
    if item.is_test:
        return item.test_question.answer if worker != "WC" else not item.test_question.answer
    return {"WA": item.id % 2 == 0, "WB": item.id % 3 != 0, "WC": item.id % 2 == 1}[worker]


def _answer_all(
    campaign: CrowdCampaign, workers=("WA", "WB", "WC")
) -> dict[str, dict[tuple[int, int], bool]]:
    """Submit every batch for each worker; return the expected votes per worker on the pairs."""
    expected: dict[str, dict[tuple[int, int], bool]] = {w: {} for w in workers}
    for batch in campaign.batches.order_by("index"):
        items = list(batch.items.select_related("test_question").order_by("position"))
        for worker in workers:
            assignment_submit(
                batch=batch,
                worker=worker_get_or_create(worker_id=worker),
                answers={item.position: _vote(worker, item) for item in items},
                times_ms={item.position: 1000 + item.position for item in items},
                assignment_id=f"{worker}-{batch.index}",
            )
            for item in items:
                if not item.is_test:
                    expected[worker][(item.response_id, item.nugget_id)] = _vote(worker, item)
    return expected


def _stored(judge_name: str) -> dict[tuple[int, int], bool]:
    return {
        (j.response_id, j.nugget_id): j.matched for j in NtrJudgment.objects.filter(judge__name=judge_name)
    }


def test_it_stores_each_workers_votes_as_judgments_of_their_own_crowd_judge():
    campaign = build_campaign()
    expected = _answer_all(campaign)

    for worker in ("WA", "WB", "WC"):
        judge = Judge.objects.get(name=f"mturk-worker:{worker}")
        assert judge.kind == Judge.Kind.CROWD
        assert _stored(judge.name) == expected[worker]
        assert len(expected[worker]) == 10  # every pair, no test question
    # The worker who failed the test question keeps their raw votes.
    assert _stored("mturk-worker:WC")
    times = set(
        NtrJudgment.objects.filter(judge__name="mturk-worker:WA").values_list("time_spent_ms", flat=True)
    )
    assert times and all(1000 <= t <= 1005 for t in times)


def test_it_names_in_platform_workers_crowd_worker():
    campaign = build_campaign(provider=CrowdCampaign.Provider.PLATFORM)
    expected = _answer_all(campaign, workers=("WA",))

    assert _stored("crowd-worker:WA") == expected["WA"]
    assert not Judge.objects.filter(name="mturk-worker:WA").exists()


def test_it_updates_a_workers_judgment_when_the_answer_is_stored_again():
    campaign = build_campaign()
    batch = campaign.batches.order_by("index").first()
    items = list(batch.items.select_related("test_question").order_by("position"))
    worker = worker_get_or_create(worker_id="WA")
    answers = {item.position: _vote("WA", item) for item in items}
    assignment_submit(batch=batch, worker=worker, answers=answers, assignment_id="A1")
    pair = next(item for item in items if not item.is_test)
    answers[pair.position] = not answers[pair.position]
    assignment_submit(batch=batch, worker=worker, answers=answers, assignment_id="A1")

    label = NtrJudgment.objects.get(judge__name="mturk-worker:WA", response=pair.response, nugget=pair.nugget)
    assert label.matched == answers[pair.position]
    assert NtrJudgment.objects.filter(judge__name="mturk-worker:WA").count() == 5


def test_it_refuses_a_worker_whose_judge_name_belongs_to_another_kind_of_judge():
    campaign = build_campaign()
    JudgeFactory(name="mturk-worker:WA", kind=Judge.Kind.IMPORTED)
    batch = campaign.batches.order_by("index").first()
    items = list(batch.items.select_related("test_question").order_by("position"))

    with pytest.raises(CrowdError, match="not a crowd judge"):
        assignment_submit(
            batch=batch,
            worker=worker_get_or_create(worker_id="WA"),
            answers={item.position: True for item in items},
        )
    assert not NtrJudgment.objects.exists()


def test_sync_three_times_gives_the_same_worker_judgments(fake_mturk):
    campaign = build_campaign()
    call_command("mturk_publish", campaign=campaign.name)
    expected: dict[str, dict[tuple[int, int], bool]] = {"WA": {}, "WB": {}}
    for batch in campaign.batches.order_by("index"):
        batch.refresh_from_db()
        items = list(batch.items.select_related("test_question").order_by("position"))
        for worker in expected:
            # The worker answers on MTurk's side only (our page never saw them), so sync creates the rows.
            location = urllib.parse.urlsplit(fake_mturk.fake.worker_accept(batch.hit_id, worker))
            assignment_id = urllib.parse.parse_qs(location.query)["assignmentId"][0]
            fields = {f"q{i.position + 1}": "yes" if _vote(worker, i) else "no" for i in items}
            fake_mturk.fake.external_submit({"assignmentId": assignment_id, **fields})
            for item in items:
                if not item.is_test:
                    expected[worker][(item.response_id, item.nugget_id)] = _vote(worker, item)
    assert not NtrJudgment.objects.exists()

    snapshots = []
    for _ in range(3):
        call_command("mturk_sync", campaign=campaign.name, stdout=StringIO())
        snapshots.append(
            sorted(
                NtrJudgment.objects.values_list("id", "judge__name", "response_id", "nugget_id", "matched")
            )
        )
    assert snapshots[0] == snapshots[1] == snapshots[2]
    assert len(snapshots[0]) == 20
    for worker, votes in expected.items():
        assert _stored(f"mturk-worker:{worker}") == votes


def test_the_worker_page_answers_become_vote_judgments_only_once_mturk_confirms_them(fake_mturk):
    campaign = build_campaign()
    call_command("mturk_publish", campaign=campaign.name)
    batch = campaign.batches.order_by("index").first()
    batch.refresh_from_db()
    items = list(batch.items.select_related("test_question").order_by("position"))
    framed = urllib.parse.urlsplit(fake_mturk.fake.worker_accept(batch.hit_id, "WB"))

    stored = Client().post(
        f"{framed.path}?{framed.query}",
        {f"q{i.position + 1}": "yes" if _vote("WB", i) else "no" for i in items},
    )

    assert stored.status_code == 200
    action, fields = hidden_form(stored.content.decode())
    assert action == f"{fake_mturk.url}/mturk/externalSubmit"
    assert _stored("mturk-worker:WB") == {}  # provisional: anyone may post to the HIT page
    fake_mturk.fake.external_submit(dict(fields))
    call_command("mturk_sync", campaign=campaign.name, stdout=StringIO())
    assert _stored("mturk-worker:WB") == {
        (i.response_id, i.nugget_id): _vote("WB", i) for i in items if not i.is_test
    }


def test_agreement_compares_workers_with_each_other_and_with_an_llm_judge():
    campaign = build_campaign()
    expected = _answer_all(campaign)
    llm = JudgeFactory(name="gpt-4o-ntr", kind=Judge.Kind.LLM)
    pairs = sorted(expected["WA"])
    llm_votes = {pair: (pair[0] + pair[1]) % 2 == 0 for pair in pairs[:8]}  # the LLM judged 8 of 10
    for (response_id, nugget_id), matched in llm_votes.items():
        NtrJudgment.objects.create(judge=llm, response_id=response_id, nugget_id=nugget_id, matched=matched)

    out = StringIO()
    call_command(
        "agreement",
        collection=campaign.collection.name,
        task="ntr",
        judges=["mturk-worker:WA", "gpt-4o-ntr", "mturk-worker:WB"],
        format="json",
        resamples=20,
        stdout=out,
    )
    report = json.loads(out.getvalue())

    shared = sorted(llm_votes)
    a = [int(expected["WA"][p]) for p in shared]
    b = [int(llm_votes[p]) for p in shared]
    assert report["judges"] == ["mturk-worker:WA", "gpt-4o-ntr"]
    assert report["n"] == 8
    assert report["exact_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    assert report["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b))
    matrix = np.array(
        [
            [int(expected["WA"][p]) for p in pairs],
            [int(llm_votes[p]) if p in llm_votes else np.nan for p in pairs],
            [int(expected["WB"][p]) for p in pairs],
        ],
        dtype=float,
    )
    assert report["krippendorff_alpha_all_judges"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    )
