"""Crowd nugget assignment (TREC RAG): three-way questions in the batch machinery, aggregated by majority
vote or by Dawid-Skene, MACE and GLAD from crowd-kit into the crowd judge's NuggetAssignments."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Condition, Nugget, NuggetAssignment
from crowd.aggregation.selectors import campaign_fit, counted_answers
from crowd.aggregation.services import fit_job_run
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.campaigns.services import test_question_create as question_create
from crowd.campaigns.services import test_questions_generate as services_generate
from crowd.errors import CrowdError
from crowd.models import CrowdAnswer, CrowdAssignment, CrowdCampaign, CrowdFitJob
from tests.background import task_left_by_a_dead_worker, tasks_run_ready
from tests.crowd.crowd_helpers import build_nugget_campaign, synthetic_crowd_answer
from tests.factories import OrganiserFactory, UserFactory

pytestmark = pytest.mark.django_db

S, P, N = "support", "partial_support", "not_support"


@pytest.fixture(autouse=True)
def _quick_models(settings):
    # crowd-kit's defaults (MACE: 10 restarts of 50 iterations; GLAD: 100 iterations, each an optimiser of up
    # to 25 steps) take minutes on the synthetic crowd on a loaded machine; fewer keep what these tests show.
    settings.CROWD_MACE_RESTARTS = 1
    settings.CROWD_MACE_ITERATIONS = 20
    settings.CROWD_GLAD_ITERATIONS = 10
    settings.CROWD_GLAD_M_STEP_ITERATIONS = 5
    settings.CROWD_DS_ITERATIONS = 50


def _small_campaign(**kwargs) -> CrowdCampaign:
    # 2 questions x 1 answer x 2 nuggets = 4 pairs in one batch, with one test question (known: support).
    options = {
        "topics": 2,
        "runs": 1,
        "nuggets": 2,
        "n_tests": 3,
        "batch_size": 4,
        "tests_per_batch": 1,
        "assignments": 4,
    }
    return build_nugget_campaign(**{**options, **kwargs})


def _answer(batch, worker: str, by_pair: dict[int, str], test: str = S) -> CrowdAssignment:
    """`by_pair` maps the pair's order in the batch (0-based, tests skipped) to the worker's label."""
    pairs = [item for item in batch.items.order_by("position") if not item.is_test]
    answers = {item.position: by_pair[pairs.index(item)] for item in pairs}
    answers.update({item.position: test for item in batch.items.all() if item.is_test})
    return assignment_submit(batch=batch, worker=worker_get_or_create(worker_id=worker), answers=answers)


def _labels(campaign: CrowdCampaign) -> dict[tuple[int, int], tuple[int, str]]:
    return {
        (a.response_id, a.nugget_id): (a.id, a.label)
        for a in NuggetAssignment.objects.filter(judge=campaign.label_judge)
    }


def test_it_asks_three_way_questions_on_the_worker_page_and_scores_tests_by_exact_label(client):
    campaign = _small_campaign()
    batch = campaign.batches.get()
    client.force_login(UserFactory())
    url = reverse("crowd:batch-take", args=[batch.id])

    page = client.get(url)
    wrong_kind = client.post(url, {f"q{n}": "yes" for n in range(1, 6)})
    test_position = batch.items.get(test_question__isnull=False).position + 1
    posted = {f"q{n}": "p" if n == test_position else "support" for n in range(1, 6)}
    taken = client.post(url, posted)

    assert page.status_code == 200
    assert b'data-value="partial_support" data-key="p">' in page.content
    assert b"Does the answer support the fact?" in page.content and b'id="crowd-yes"' not in page.content
    assert wrong_kind.status_code == 400
    assert b"answer must be one of support, partial_support, not_support" in wrong_kind.content
    assert taken.status_code == 302
    assignment = CrowdAssignment.objects.get(batch=batch)
    # Partial support is not the test question's known support: the test is failed.
    assert assignment.passed_tests is False
    assert sorted(assignment.answers.values_list("support", "matched")) == [(P, True)] + [(S, True)] * 4
    worker_labels = NuggetAssignment.objects.filter(judge__name__startswith="crowd-worker:user:")
    assert sorted(worker_labels.values_list("label", "condition")) == [(S, Condition.SCRATCH)] * 4


def test_it_composes_three_way_campaigns_from_three_way_test_questions_only():
    campaign = build_nugget_campaign(topics=2, runs=2, nuggets=3, n_tests=6, batch_size=3, tests_per_batch=1)

    tests = [
        item.test_question for batch in campaign.batches.all() for item in batch.items.all() if item.is_test
    ]

    assert campaign.label_judge.name == "crowd-nuggets"
    assert campaign.title == "Does the answer support this fact?"
    assert [q.support for q in tests] == [S, N, P, S]
    assert all(q.answer == (q.support != N) for q in tests)
    with pytest.raises(CrowdError, match="one of them"):
        question_create(
            collection=campaign.collection, response_text="a", nugget_text="b", answer=True, support=S
        )


def _glad_alphas(answers) -> dict[str, float]:
    """GLAD's abilities from crowd-kit called directly, with the settings of `_quick_models`."""
    import pandas as pd
    from crowdkit.aggregation import GLAD

    frame = pd.DataFrame([(a.task, a.worker, a.label) for a in answers], columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glad = GLAD(n_iter=10, m_step_max_iter=5).fit(frame)
    return {str(w): float(a) for w, a in glad.alphas_.items()}


def test_it_writes_the_majority_once_leaves_out_failed_workers_and_shows_reliability_escaped(client):
    campaign = _small_campaign()
    batch = campaign.batches.get()
    _answer(batch, "<b>ann<b>", {0: S, 1: S, 2: N, 3: P})
    _answer(batch, "bob", {0: S, 1: P, 2: N, 3: P})
    # Fails the test question: left out of the majority, so pair 1 is a tie (support against partial).
    _answer(batch, "cat", {0: N, 1: S, 2: N, 3: S}, test=N)
    client.force_login(OrganiserFactory())
    page_url = reverse("crowd:campaign", args=[campaign.name])

    out = StringIO()
    call_command(
        "crowd_aggregate", "--campaign", campaign.name, "--method", "majority", "--compare", stdout=out
    )
    first = _labels(campaign)
    written = {pair: label for pair, (_, label) in first.items()}
    first_ids = {pair: pk for pair, (pk, _) in first.items()}
    pairs = [(i.response_id, i.nugget_id) for i in batch.items.order_by("position") if not i.is_test]
    first_report = CrowdCampaign.objects.get(pk=campaign.pk).fit_report
    campaign_answers = counted_answers(campaign=campaign)
    with CaptureQueriesContext(connection) as three_workers:
        first_page = client.get(page_url)

    _answer(batch, "dan", {0: S, 1: P, 2: N, 3: P})
    call_command("crowd_aggregate", "--campaign", campaign.name, "--compare", stdout=StringIO())
    with CaptureQueriesContext(connection) as four_workers:
        second_page = client.get(page_url)
    rewritten = _labels(campaign)
    call_command("crowd_aggregate", "--campaign", campaign.name, "--min-votes", "4", stdout=StringIO())

    assert (
        "3 labels as crowd-nuggets by majority (1 not_support, 1 partial_support, 1 support), 1 unresolved"
        in (out.getvalue())
    )
    assert written == {pairs[0]: S, pairs[2]: N, pairs[3]: P}
    assert first_page.status_code == 200
    html = first_page.content.decode()
    assert "&lt;b&gt;ann&lt;b&gt;" in html and "<b>ann<b>" not in html
    assert 'id="crowd-fit-methods"' in html and "crowd-nuggets-mace" in html
    assert "MACE: competence, the chance the worker is not spamming" in html
    ann = next(w for w in first_report["workers"] if w["worker"] == "<b>ann<b>")
    assert f'<td class="crowd-mace">{ann["mace"]:.3f}</td>' in html
    assert {w["worker"]: w["glad"] for w in first_report["workers"]} == pytest.approx(
        _glad_alphas(campaign_answers)
    )
    assert second_page.status_code == 200
    assert len(four_workers) == len(three_workers)
    # With dan, pair 1 has 2 partial against 1 support: the tie is resolved; the other labels keep their rows.
    assert {pair: label for pair, (_, label) in rewritten.items()} == {**written, pairs[1]: P}
    assert all(rewritten[pair][0] == first_ids[pair] for pair in first_ids)
    # Only three workers passed: with --min-votes 4 no pair keeps a label.
    assert not NuggetAssignment.objects.filter(judge=campaign.label_judge).exists()


def test_it_fits_only_the_methods_asked_for():
    campaign = _small_campaign()
    batch = campaign.batches.get()
    _answer(batch, "ann", {0: S, 1: S, 2: N, 3: P})
    _answer(batch, "bob", {0: S, 1: P, 2: N, 3: P})

    ds_only = campaign_fit(campaign=campaign, methods=("ds",))
    majority_only = campaign_fit(campaign=campaign, methods=("majority",))

    assert set(ds_only.labels) == {"majority", "ds"}
    assert set(ds_only.report["methods"]) == {"majority", "ds"}
    assert all(
        w["ds"] is not None and w["mace"] is None and w["glad"] is None for w in ds_only.report["workers"]
    )
    assert set(majority_only.labels) == {"majority"}
    assert all(w["ds"] is None for w in majority_only.report["workers"])


def _page_fit_job(client, campaign: CrowdCampaign) -> str:
    html = client.get(reverse("crowd:campaign", args=[campaign.name])).content.decode()
    start = html.index('<p id="crowd-fit-job"')
    return html[start : html.index("</p>", start)]


def test_it_aggregates_from_the_page_on_a_task_worker_and_shows_waiting_then_done(client):
    campaign = _small_campaign()
    batch = campaign.batches.get()
    _answer(batch, "ann", {0: S, 1: S, 2: N, 3: P})
    _answer(batch, "bob", {0: S, 1: P, 2: N, 3: P})
    client.force_login(OrganiserFactory())
    url = reverse("crowd:campaign-aggregate", args=[campaign.name])

    queued = client.post(url, {"method": "ds", "min_votes": 1})
    waiting = _page_fit_job(client, campaign)
    twice = client.post(url, {"method": "mace", "min_votes": 1}, follow=True)
    labels_before = NuggetAssignment.objects.filter(judge__name="crowd-nuggets-ds").count()
    ran = tasks_run_ready()
    done = _page_fit_job(client, campaign)

    assert queued.status_code == 302
    assert 'data-status="pending"' in waiting and "waiting for a task worker" in waiting
    assert twice.status_code == 200
    assert "an aggregation by ds is waiting for a worker: wait for it to finish" in twice.content.decode()
    assert labels_before == 0  # the request fitted nothing: the task did
    assert ran == 1
    assert 'data-status="done"' in done
    assert "4 labels as crowd-nuggets-ds by ds" in done
    job = CrowdFitJob.objects.get()
    assert (job.method, job.status, job.min_votes) == ("ds", CrowdFitJob.Status.DONE, 1)
    assert NuggetAssignment.objects.filter(judge__name="crowd-nuggets-ds").count() == 4
    report = CrowdCampaign.objects.get(pk=campaign.pk).fit_report
    assert set(report["methods"]) == {"majority", "ds", "mace", "glad"}


def test_it_shows_an_aggregation_whose_worker_died_as_interrupted_and_starts_it_anew(client):
    campaign = _small_campaign()
    _answer(campaign.batches.get(), "ann", {0: S, 1: S, 2: N, 3: P})
    client.force_login(OrganiserFactory())
    url = reverse("crowd:campaign-aggregate", args=[campaign.name])
    client.post(url, {"method": "majority", "min_votes": 1})
    lost = CrowdFitJob.objects.get()
    task_left_by_a_dead_worker(lost.task_id)

    shown = _page_fit_job(client, campaign)
    again = client.post(url, {"method": "majority", "min_votes": 1})

    assert 'data-status="interrupted"' in shown and "aggregate again" in shown
    assert again.status_code == 302
    lost.refresh_from_db()
    assert lost.status == CrowdFitJob.Status.FAILED
    assert CrowdFitJob.objects.exclude(pk=lost.pk).get().status == CrowdFitJob.Status.PENDING


def test_it_records_a_failed_aggregation_on_its_job():
    campaign = _small_campaign()
    job = CrowdFitJob.objects.create(campaign=campaign, method="nonsense", min_votes=1)

    fit_job_run(job_id=job.pk)

    job.refresh_from_db()
    assert job.status == CrowdFitJob.Status.FAILED
    assert job.message == "method 'nonsense' is not one of majority, ds, mace, glad"
    assert job.finished_at is not None


def test_it_beats_majority_with_dawid_skene_and_mace_on_a_synthetic_crowd_as_crowdkit_computes_them():
    # 6 questions x 4 answers x 5 nuggets = 120 pairs in 24 batches of 5, each with 3 of 30 test questions.
    campaign = build_nugget_campaign(topics=6, runs=4, seed=1)
    workers: dict[str, float | str] = {
        "good-1": 0.9,
        "good-2": 0.85,
        "good-3": 0.8,
        "fair-1": 0.6,
        **{f"random-{i}": 1 / 3 for i in range(1, 6)},
        "always-support": S,
    }
    synthetic_crowd_answer(campaign, workers=workers, seed=1)

    out = StringIO()
    call_command("crowd_aggregate", "--campaign", campaign.name, "--method", "ds", stdout=out)
    written = {
        (a.response_id, a.nugget_id): a.label
        for a in NuggetAssignment.objects.filter(judge__name="crowd-nuggets-ds")
    }
    only_ds = CrowdCampaign.objects.get(pk=campaign.pk).fit_report
    again = StringIO()
    call_command("crowd_aggregate", "--campaign", campaign.name, "--method", "ds", stdout=again)
    # GLAD, the slowest to fit, is checked against crowd-kit on the small campaign (the majority test).
    fit = campaign_fit(campaign=campaign, methods=("ds", "mace"))

    methods = fit.report["methods"]
    # Aggregating fits only its own method and stores no comparison (--compare or the page's job does).
    assert only_ds == {}
    assert methods["majority"]["scored"] == methods["ds"]["scored"] == 30
    assert methods["ds"]["correct"] > methods["majority"]["correct"]
    assert methods["mace"]["correct"] > methods["majority"]["correct"]
    assert "120 labels as crowd-nuggets-ds by ds" in out.getvalue()
    assert "0 new, 0 changed, 120 unchanged, 0 removed" in again.getvalue()
    # The same numbers as crowd-kit called directly on the confirmed answers.
    import pandas as pd
    from crowdkit.aggregation import MACE, DawidSkene

    answers = counted_answers(campaign=campaign)
    assert len(answers) == CrowdAnswer.objects.filter(item__batch__campaign=campaign).count() == 24 * 8 * 5
    frame = pd.DataFrame([(a.task, a.worker, a.label) for a in answers], columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = DawidSkene(n_iter=50).fit(frame)
        mace = MACE(n_restarts=1, n_iter=20, random_state=campaign.seed).fit(frame)
    by_worker = {w["worker"]: w for w in fit.report["workers"]}
    for worker in workers:
        # A worker's confusion matrix has rows only for the labels they gave (the constant spammer: one).
        matrix = ds.errors_.loc[worker]
        diagonal = sum(
            ds.priors_[label] * matrix.loc[label, label] for label in (S, P, N) if label in matrix.index
        )
        assert by_worker[worker]["ds"] == pytest.approx(diagonal)
        assert by_worker[worker]["mace"] == pytest.approx(
            mace.spamming_[list(pd.unique(frame.worker)).index(worker), 1]
        )
    assert written == {
        (a.response_id, a.nugget_id): ds.labels_[a.task] for a in answers if a.task.startswith("pair:")
    }
    assert by_worker["good-1"]["ds"] > by_worker["random-1"]["ds"]
    assert by_worker["good-1"]["mace"] > by_worker["random-1"]["mace"]


@pytest.mark.parametrize("method", ["majority", "ds", "mace", "glad"])
def test_it_leaves_every_pair_unresolved_before_any_worker_answered(method):
    campaign = _small_campaign()
    out = StringIO()

    call_command("crowd_aggregate", "--campaign", campaign.name, "--method", method, stdout=out)

    assert "0 labels" in out.getvalue() and "4 unresolved" in out.getvalue()
    assert not NuggetAssignment.objects.filter(judge__name__startswith="crowd-nuggets").exists()


def test_it_keeps_crowdkit_out_of_the_pages_and_commands_until_aggregation_runs():
    code = (
        "import sys, django; django.setup();"
        "import assay.urls, crowd.views.console, crowd.aggregation.services;"
        "import crowd.management.commands.crowd_aggregate;"
        "print('crowdkit' in sys.modules)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "assay.settings"},
        check=False,
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_the_campaign_alpha_counts_three_way_answers_not_their_yes_no():
    import krippendorff
    import numpy as np

    from crowd.campaigns.report import campaign_report

    campaign = _small_campaign()
    batch = campaign.batches.get()
    # Support and partial support collapse to "yes": over yes/no, these workers would agree on every pair.
    _answer(batch, "w1", {0: S, 1: S, 2: P, 3: N})
    _answer(batch, "w2", {0: P, 1: S, 2: S, 3: N})
    _answer(batch, "w3", {0: S, 1: P, 2: P, 3: N})

    report = campaign_report(campaign=campaign)

    # The votes above per pair, as counts of (not, partial, support).
    counts = np.array([[0, 1, 2], [0, 1, 2], [0, 2, 1], [3, 0, 0]])
    expected = krippendorff.alpha(
        value_counts=counts, value_domain=[0.0, 1.0, 2.0], level_of_measurement="nominal"
    )
    assert report.alpha == pytest.approx(expected)
    assert report.alpha < 1


def test_generated_three_way_test_questions_include_partial_support_so_always_support_fails_most():
    campaign = build_nugget_campaign(topics=2, runs=1, nuggets=2, n_tests=0, tests_per_batch=0)
    for i, nugget in enumerate(Nugget.objects.filter(judge=campaign.nugget_judge).order_by("id")):
        nugget.text = f"Fact {i} says the West Highland Way runs 96 miles."
        nugget.save(update_fields=["text"])

    made = services_generate(campaign=campaign, count=7)

    assert [q.support for q in made] == [S, P, N, S, P, N, S]
    # A worker answering "support" to every test question passes 3 of 7 (before: 4 of 7, no partial ones).
    assert sum(q.support == S for q in made) == 3
    for question in made:
        nugget = question.origin.text.rstrip(".")
        if question.support == S:
            assert nugget in question.response_text
        elif question.support == P:
            # the nugget's first half (its first 5 of 10 words), never the whole
            assert " ".join(nugget.split()[:5]) in question.response_text
            assert nugget not in question.response_text
        else:
            assert " ".join(nugget.split()[:5]) not in question.response_text


def test_generated_three_way_questions_leave_partial_out_when_no_nugget_is_long_enough():
    campaign = build_nugget_campaign(topics=2, runs=1, nuggets=2, n_tests=0, tests_per_batch=0)
    Nugget.objects.filter(judge=campaign.nugget_judge).update(text="Too short to halve.")

    made = services_generate(campaign=campaign, count=4)

    assert [q.support for q in made] == [S, N, S, N]
