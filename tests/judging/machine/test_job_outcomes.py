"""What a finished judge job says it did: never "done" when it judged nothing, both counts when it
skipped some units, on the job row, the Jobs pages and the judge command."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Nugget, RelevanceJudgment
from judging.machine.jobs import judge_job_run, judge_job_start
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    OrganiserFactory,
    PassageFactory,
    RankingFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def textless():
    """Two turns whose one run ranks only passages the collection has no text for."""
    collection = CollectionFactory(name="textless")
    topic = TopicFactory(collection=collection, number="3")
    run = RunFactory(collection=collection, name="bm25")
    for position in (1, 2):
        turn = TurnFactory(topic=topic, position=position)
        RankingFactory(run=run, turn=turn, passage_ids=["gone:1"])
    return collection


def _start(collection, task="relevance", options=None):
    return judge_job_start(
        collection=collection,
        task=task,
        judge_name="gpt-judge",
        model="gpt-4o-mini",
        options=options if options is not None else {"depth": 30},
        concurrency=2,
    )


def test_it_fails_a_job_whose_every_unit_was_skipped_and_says_why(fake_openai, textless):
    job = judge_job_run(job=_start(textless))

    assert job.status == "failed"
    assert job.error == "nothing judged: all 2 units skipped (passages without text)"
    assert (job.units_total, job.units_done, job.units_failed, job.calls_made) == (0, 0, 0, 0)
    assert fake_openai.received == []
    assert not RelevanceJudgment.objects.exists()


def test_it_resumes_a_job_that_judged_nothing_once_its_passages_have_text(fake_openai, textless):
    fake_openai.responder = lambda prompt: "Grade: 2"
    first = judge_job_run(job=_start(textless))
    PassageFactory(collection=textless, passage_id="gone:1", text="Found again.")

    again = judge_job_run(job=_start(textless))

    assert again.pk == first.pk
    assert (again.status, again.error, again.units_done) == ("done", "", 2)
    assert RelevanceJudgment.objects.count() == 2


def test_it_says_both_counts_when_it_judged_some_and_skipped_some(client, fake_openai, textless):
    turn = textless.topics.get().turns.order_by("position").first()
    PassageFactory(collection=textless, passage_id="here:1", text="A passage with text.")
    RankingFactory(run=RunFactory(collection=textless, name="dense"), turn=turn, passage_ids=["here:1"])
    fake_openai.responder = lambda prompt: "Grade: 2"
    job = judge_job_run(job=_start(textless))
    client.force_login(OrganiserFactory())

    detail = client.get(reverse("judging:job-detail", args=[job.pk]))
    progress = client.get(reverse("judging:job-progress", args=[job.pk]))

    assert (detail.status_code, progress.status_code) == (200, 200)
    said = "done: 1 unit judged; 2 units skipped (passages without text)"
    assert said.capitalize() in detail.content.decode()
    assert (progress.json()["status"], progress.json()["status_text"]) == ("done", said)
    assert (job.status, job.units_done, job.error) == ("done", 1, "2 units skipped (passages without text)")


def test_it_shows_a_job_that_judged_nothing_as_failed_on_the_jobs_pages(client, fake_openai, textless):
    job = judge_job_run(job=_start(textless))
    client.force_login(OrganiserFactory())

    listing = client.get(reverse("judging:job-list"))
    detail = client.get(reverse("judging:job-detail", args=[job.pk]))

    assert (listing.status_code, detail.status_code) == (200, 200)
    said = "failed: nothing judged: all 2 units skipped (passages without text)"
    assert said in listing.content.decode()
    assert said.capitalize() in detail.content.decode()
    assert 'data-status="done"' not in listing.content.decode()
    assert JudgeJob.objects.get(pk=job.pk).status == "failed"


def test_it_makes_the_judge_command_fail_when_nothing_was_judged(fake_openai, textless):
    out = StringIO()

    with pytest.raises(CommandError, match=r"nothing judged: all 2 units skipped \(passages without text\)"):
        call_command("judge", "relevance", "--collection", "textless", "--judge", "gpt-judge", stdout=out)

    assert "failed: nothing judged: all 2 units skipped (passages without text): 0 units" in out.getvalue()
    assert JudgeJob.objects.get().status == "failed"


def test_it_says_why_a_nuggets_job_found_no_passage_to_read(fake_openai, textless):
    job = judge_job_run(job=_start(textless, "nuggets", {"source": "passages", "min_grade": 3}))

    assert job.status == "failed"
    assert job.error == "nothing judged: no passage of the chosen turns is graded 3 or more"
    assert fake_openai.received == []


def test_it_fails_a_dedup_job_over_turns_without_nuggets(textless):
    JudgeFactory(name="gold", kind="llm")
    job = judge_job_start(
        collection=textless,
        task="dedup",
        judge_name="gold-dedup",
        model="",
        options={"source_judge": "gold", "exact_only": True},
        concurrency=1,
    )

    job = judge_job_run(job=job)

    assert (job.status, job.units_done) == ("failed", 2)
    assert job.error == "nothing judged: gold has no nuggets in the chosen turns"
    assert not Nugget.objects.filter(judge__name="gold-dedup").exists()
