"""The job form asks only for what the chosen task needs, offers the task's judges of the collection,
warns when no LLM endpoint is set, and starting a job leads to its page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Judge, Nugget, NuggetAssignment, NuggetImportanceJudgment
from devtools.openai_server import toy_responder
from judging.models import JudgeJob
from tests.background import IMMEDIATE
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    PassageFactory,
    RelevanceJudgmentFactory,
    ResponseFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_llm(settings):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    settings.AZURE_OPENAI_ENDPOINT = ""


@pytest.fixture
def judges():
    """Two collections; in "mine", one relevance judge and one nugget judge; others elsewhere."""
    mine, other = CollectionFactory(name="mine"), CollectionFactory(name="other")
    turn = TurnFactory(topic__collection=mine)
    elsewhere = TurnFactory(topic__collection=other)
    RelevanceJudgmentFactory(judge=JudgeFactory(name="qrels-mine"), turn=turn)
    RelevanceJudgmentFactory(judge=JudgeFactory(name="qrels-other"), turn=elsewhere)
    NuggetFactory(judge=JudgeFactory(name="gold-mine"), turn=turn, text="Paris is the capital.")
    NuggetFactory(judge=JudgeFactory(name="gold-other"), turn=elsewhere)
    JudgeFactory(name="labels-nothing")
    return mine


def _names(form, field):
    return [j.name for j in form.fields[field].queryset]


def test_the_job_page_is_for_organisers_only(client, judges):
    url = reverse("judging:job-list") + "?collection=mine&task=ntr"
    assert client.get(url).status_code == 302
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    client.force_login(OrganiserFactory())
    assert client.get(url).status_code == 200


def test_judge_lists_hold_only_judges_of_the_task_in_the_collection(client, judges):
    client.force_login(OrganiserFactory())
    response = client.get(reverse("judging:job-list"), {"collection": "mine", "task": "ntr"})
    assert response.status_code == 200
    form = response.context["form"]
    assert _names(form, "relevance_judge") == ["qrels-mine"]
    assert _names(form, "gold_judge") == ["gold-mine"]
    assert _names(form, "source_judge") == ["gold-mine"]
    assert form["task"].value() == "ntr"
    other = client.get(reverse("judging:job-list"), {"collection": "other"}).context["form"]
    assert _names(other, "gold_judge") == ["gold-other"]


def test_each_field_says_which_tasks_read_it(client, judges):
    client.force_login(OrganiserFactory())
    html = client.get(reverse("judging:job-list")).content.decode()
    assert 'id="field-depth" data-tasks="relevance"' in html
    assert 'id="field-source_judge" data-tasks="dedup"' in html
    assert 'id="field-gold_judge" data-tasks="ntr ntn"' in html
    assert (
        'id="field-concurrency" data-tasks="relevance nuggets ntr support nuggets-create importance assignment"'
        in html
    )
    assert (
        'id="field-judge_name" data-tasks="relevance nuggets ntr support ntn dedup nuggets-create importance '
        'assignment"'
    ) in html
    assert 'id="field-runs" data-tasks="relevance nuggets ntr support ntn assignment"' in html
    assert 'id="field-min_grade" data-tasks="nuggets nuggets-create"' in html
    assert 'id="field-max_nuggets" data-tasks="nuggets-create"' in html
    assert 'id="field-window" data-tasks="nuggets-create importance assignment"' in html
    assert 'id="field-nuggets_judge" data-tasks="importance assignment"' in html


def test_a_task_without_its_judge_answers_400_with_what_it_needs(client, judges, no_llm):
    client.force_login(OrganiserFactory())
    response = client.post(
        reverse("judging:job-start"), {"collection": "mine", "task": "dedup", "judge_name": "dd"}
    )
    assert response.status_code == 400
    assert "the dedup task needs the judge whose nuggets to de-duplicate" in response.content.decode()
    # A judge of another collection (or with no nuggets) is not a choice.
    response = client.post(
        reverse("judging:job-start"),
        {"collection": "mine", "task": "dedup", "judge_name": "dd", "source_judge": "gold-other"},
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not JudgeJob.objects.exists()
    assert not Judge.objects.filter(name="dd").exists()


def test_fields_of_other_tasks_are_ignored_not_validated(
    client, judges, no_llm, django_capture_on_commit_callbacks, settings
):
    settings.TASKS = IMMEDIATE
    client.force_login(OrganiserFactory())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("judging:job-start"),
            {
                "collection": "mine",
                "task": "dedup",
                "judge_name": "gold-dedup",
                "source_judge": "gold-mine",
                "exact_only": "on",
                "depth": "not a number",
                "gold_judge": "labels-nothing",
                "runs": "some-run",
            },
        )
    job = JudgeJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:job-detail", args=[job.pk])
    assert job.options == {"source_judge": "gold-mine", "exact_only": True}
    page = client.get(response["Location"])
    assert f"Job {job.pk} started" in page.content.decode()


def test_the_page_warns_when_no_llm_endpoint_is_set_and_refuses_llm_jobs(client, judges, no_llm):
    client.force_login(OrganiserFactory())
    html = client.get(reverse("judging:job-list")).content.decode()
    assert 'id="llm-warning"' in html and "OPENAI_BASE_URL" in html
    response = client.post(
        reverse("judging:job-start"), {"collection": "mine", "task": "relevance", "judge_name": "llm"}
    )
    assert response.status_code == 400
    assert "No LLM endpoint is configured" in response.content.decode()
    assert not JudgeJob.objects.exists()


def test_no_warning_once_an_endpoint_is_set(client, judges, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    client.force_login(OrganiserFactory())
    assert 'id="llm-warning"' not in client.get(reverse("judging:job-list")).content.decode()


def test_it_says_when_llm_jobs_go_to_the_local_fake_make_run_started(client, judges, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    client.force_login(OrganiserFactory())
    assert 'id="llm-local-fake"' not in client.get(reverse("judging:job-list")).content.decode()

    settings.LOCAL_FAKES = ["llm", "mturk"]
    response = client.get(reverse("judging:job-list"))

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="llm-local-fake"' in html and "http://127.0.0.1:9/v1" in html
    assert 'id="llm-warning"' not in html


def test_reading_the_job_pages_creates_no_judge(client, judges):
    client.force_login(OrganiserFactory(username="organiser"))
    before = set(Judge.objects.values_list("name", flat=True))
    client.get(reverse("judging:job-list"))
    client.get(reverse("judging:job-list"), {"collection": "mine", "task": "nuggets"})
    assert set(Judge.objects.values_list("name", flat=True)) == before


def test_it_starts_each_trec_rag_nugget_job_and_the_worker_runs_it(
    client, judges, fake_openai, django_capture_on_commit_callbacks, settings
):
    settings.TASKS = IMMEDIATE
    fake_openai.responder = toy_responder
    turn = judges.turns.get()
    PassageFactory(collection=judges, passage_id="doc:1", text="Paris is the capital of France. It is old.")
    RelevanceJudgmentFactory(
        judge=Judge.objects.get(name="qrels-mine"), turn=turn, passage_id="doc:1", grade=2
    )
    ResponseFactory(run__collection=judges, turn=turn, text="Paris is the capital of France.")
    client.force_login(OrganiserFactory())
    posts = [
        {"task": "nuggets-create", "judge_name": "auto", "relevance_judge": "qrels-mine", "min_grade": ""},
        {"task": "importance", "judge_name": "auto-vital", "nuggets_judge": "auto", "window": "5"},
        {"task": "assignment", "judge_name": "auto-assign", "nuggets_judge": "auto", "runs": ""},
    ]
    for post in posts:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("judging:job-start"), {"collection": "mine", **post})
        job = JudgeJob.objects.get(task=post["task"])
        assert response.status_code == 302
        assert response["Location"] == reverse("judging:job-detail", args=[job.pk])
        job.refresh_from_db()
        assert (job.status, job.units_failed) == ("done", 0)

    options = dict(JudgeJob.objects.values_list("task", "options"))
    assert options == {
        "nuggets-create": {"min_grade": 1, "relevance_judge": "qrels-mine", "max_nuggets": 30, "window": 10},
        "importance": {"nuggets_judge": "auto", "window": 5},
        "assignment": {"nuggets_judge": "auto", "window": 10},
    }
    assert list(Nugget.objects.filter(judge__name="auto").values_list("text", flat=True)) == [
        "Paris is the capital of France"
    ]
    assert NuggetImportanceJudgment.objects.filter(judge__name="auto-vital", condition="machine").count() == 1
    assert NuggetAssignment.objects.get(judge__name="auto-assign").label == "support"


def test_the_lowest_grade_starts_empty_so_each_task_takes_its_own_default(client, judges):
    client.force_login(OrganiserFactory())
    html = client.get(reverse("judging:job-list")).content.decode()
    field = re.search(r'<input[^>]*name="min_grade"[^>]*>', html)
    assert field is not None
    assert "value=" not in field.group(0)
    assert 'placeholder="2; nuggets-create: 1"' in field.group(0)


def test_importance_and_assignment_without_a_nuggets_judge_answer_400(client, judges, fake_openai):
    client.force_login(OrganiserFactory())
    for task in ("importance", "assignment"):
        response = client.post(
            reverse("judging:job-start"), {"collection": "mine", "task": task, "judge_name": "x"}
        )
        assert response.status_code == 400
        assert f"the {task} task needs the judge whose nuggets to" in response.content.decode()
    assert not JudgeJob.objects.exists()
