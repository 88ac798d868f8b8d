"""The Jobs page in real Chromium: an organiser starts an NLI job from the form, and a running job's
counts change on the page while it runs (jobs.js polls its progress)."""

import re

import pytest

from annotation.models import Judge
from judging.models import JudgeJob
from tests.background import IMMEDIATE
from tests.factories import CollectionFactory, JudgeFactory, NuggetFactory, OrganiserFactory, TurnFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_organiser_starts_a_dedup_job_from_the_form_and_sees_it_done(page, login, settings):
    # The job runs inside the start request here (the immediate backend): the suite's SQLite database
    # lives in this process's memory, where no worker process reaches it. The queue and its worker are
    # pinned by tests/judging/machine/test_llm_jobs_views.py (the page returns before the job's first answer).
    settings.TASKS = IMMEDIATE
    collection = CollectionFactory(name="dups")
    turn = TurnFactory(topic__collection=collection)
    source = JudgeFactory(name="llm-gold", kind=Judge.Kind.LLM)
    NuggetFactory(judge=source, turn=turn, key="[1]", text="Paris is the capital of France.")
    NuggetFactory(judge=source, turn=turn, key="[2]", text="paris is the capital of france")
    OrganiserFactory(username="org")
    login("org")
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)

    page.goto("/judging/jobs/?collection=dups")
    page.wait_for_selector("html[data-jobs-ready]")
    # The page's sheet (static/css/jobs.css) applies under style-src 'self': fields are a grid, hidden ones gone.
    assert page.locator("#field-depth").evaluate("el => getComputedStyle(el).display") == "grid"
    assert refused == []
    assert page.locator("#field-depth").is_visible()  # the first task, relevance, reads a depth
    page.select_option("#id_task", "dedup")
    assert not page.locator("#field-depth").is_visible()  # dedup does not
    page.fill("#id_judge_name", "llm-gold-dedup")
    page.select_option("#id_source_judge", "llm-gold")  # the collection's nugget judges
    page.check("#id_exact_only")
    page.click("#job-start button.primary")
    # Starting a job leads to its page.
    page.wait_for_url(re.compile(r"/judging/jobs/\d+/$"))
    job = JudgeJob.objects.get()
    assert page.url.endswith(f"/judging/jobs/{job.pk}/")
    assert page.locator("#job-status").is_visible()

    # The jobs page shows the job's end.
    page.goto("/judging/jobs/")
    row = page.locator(f'#jobs tr[data-job="{job.pk}"]')
    page.wait_for_function(
        f"""() => document.querySelector('#jobs tr[data-job="{job.pk}"] [data-field="status"]')
              .textContent === "done" """
    )
    assert row.locator('[data-field="status"]').text_content() == "done"
    assert row.locator('[data-field="units_done"]').text_content() == "1"
    assert (
        "1 exact and 0 entailment duplicates, 1 kept" in row.locator('[data-field="summary"]').text_content()
    )


def test_a_running_jobs_counts_change_on_the_page_without_a_reload(page, login):
    collection = CollectionFactory(name="live")
    job = JudgeJob.objects.create(
        collection=collection,
        judge=JudgeFactory(name="nli:<live>", kind=Judge.Kind.NLI),
        task="ntn",
        model="tiny",
        status="running",
        units_total=4,
        units_done=1,
        calls_made=10,
    )
    OrganiserFactory(username="org")
    login("org")
    page.goto("/judging/jobs/")
    row = page.locator(f'#jobs tr[data-job="{job.pk}"]')
    assert row.locator('[data-field="units_done"]').text_content() == "1"

    JudgeJob.objects.filter(pk=job.pk).update(
        units_done=4,
        calls_made=40,
        cache_hits=3,
        status="done",
        summary="4 turns, 43 pairs: <b>40</b> scored",
    )

    page.wait_for_function(
        f"""() => document.querySelector('#jobs tr[data-job="{job.pk}"] [data-field="status"]')
              .textContent === "done" """
    )
    assert row.locator('[data-field="units_done"]').text_content() == "4"
    assert row.locator('[data-field="calls_made"]').text_content() == "40"
    assert row.locator('[data-field="cache_hits"]').text_content() == "3"
    assert row.locator("progress").evaluate("bar => bar.value") == 100
    assert row.locator('[data-field="summary"]').text_content() == "4 turns, 43 pairs: <b>40</b> scored"
    assert row.locator('[data-field="summary"] b').count() == 0
