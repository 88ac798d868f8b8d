"""Organiser pages for judge jobs (LLM and NLI): start one, and watch every job's progress, calls and cost."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Collection
from annotation.permissions import organiser_required
from judging.clients.llm import default_model
from judging.clients.nli import default_model as nli_default_model
from judging.jobs import JobError, job_options, judge_job_start
from judging.jobs.state import job_state, job_status_text, jobs_read
from judging.models import JudgeJob
from judging.tasks import judge_job_start_background


class JobStartForm(forms.Form):
    collection = forms.ModelChoiceField(queryset=Collection.objects.all(), to_field_name="name")
    task = forms.ChoiceField(choices=JudgeJob.Task.choices)
    judge_name = forms.CharField(max_length=200, help_text="The machine judge whose labels the job writes.")
    model = forms.CharField(
        max_length=500,
        required=False,
        help_text="LLM tasks: default OPENAI_MODEL. ntn, dedup: NLI model folder or hub id, default NLI_MODEL.",
    )
    turns = forms.CharField(required=False, help_text="Turn ids separated by spaces; empty for all.")
    runs = forms.CharField(required=False, help_text="Run names separated by spaces; empty for all.")
    depth = forms.IntegerField(
        min_value=1, initial=30, required=False, help_text="relevance: each run's top DEPTH."
    )
    gold_judge = forms.CharField(
        max_length=200, required=False, help_text="ntr, ntn: judge of the gold nuggets."
    )
    response_nugget_judge = forms.CharField(
        max_length=200, required=False, help_text="ntn: judge of the nuggets of the responses."
    )
    source_judge = forms.CharField(
        max_length=200, required=False, help_text="dedup: judge whose nuggets to de-duplicate."
    )
    threshold = forms.FloatField(
        min_value=0.0, max_value=1.0, required=False, help_text="ntn, dedup: default NLI_THRESHOLD."
    )
    exact_only = forms.BooleanField(required=False, help_text="dedup: exact duplicates only, no NLI model.")
    concurrency = forms.IntegerField(
        min_value=1, max_value=256, required=False, help_text="LLM calls in flight."
    )

    def options(self) -> dict[str, Any]:
        """The job's options, shaped by the same function as the judge command's, so the same work
        started from either resumes the same job."""
        data = self.cleaned_data
        return job_options(
            data["task"], {**data, "turns": data["turns"].split(), "runs": data["runs"].split()}
        )


def _progress(job: JudgeJob) -> dict[str, Any]:
    (job,) = jobs_read([job])
    return {
        "id": job.pk,
        "status": job_state(job),
        "status_text": job_status_text(job),
        "units_done": job.units_done,
        "units_total": job.units_total,
        "units_failed": job.units_failed,
        "percent": job.percent,
        "calls_made": job.calls_made,
        "cache_hits": job.cache_hits,
        "input_tokens": job.input_tokens,
        "output_tokens": job.output_tokens,
        "cost_usd": f"{job.cost_usd:.4f}",
        "summary": job.summary,
    }


def _page(request: HttpRequest, form: JobStartForm, status: int = 200) -> HttpResponse:
    jobs = jobs_read(JudgeJob.objects.select_related("collection", "judge")[:200])
    return render(
        request,
        "jobs/list.html",
        {
            "jobs": jobs,
            "form": form,
            "default_model": default_model(),
            "default_nli_model": nli_default_model(),
            "queued": bool(settings.CELERY_BROKER_URL),
        },
        status=status,
    )


@organiser_required
def job_list(request: HttpRequest) -> HttpResponse:
    return _page(request, JobStartForm(initial={"depth": 30}))


@organiser_required
@require_POST
def job_start(request: HttpRequest) -> HttpResponse:
    form = JobStartForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    try:
        job = judge_job_start(
            collection=data["collection"],
            task=data["task"],
            judge_name=data["judge_name"],
            model=data["model"],
            options=form.options(),
            concurrency=data["concurrency"] or int(getattr(settings, "LLM_CONCURRENCY", 8)),
            user=request.user,
        )
    except JobError as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=400)
    # With a broker the job goes to a worker; without one to a thread of this process: never this request.
    transaction.on_commit(lambda: judge_job_start_background(job=job))
    return redirect("judging:job-list")


@organiser_required
def job_progress(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(_progress(get_object_or_404(JudgeJob, pk=pk)))


@organiser_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(JudgeJob.objects.select_related("collection", "judge"), pk=pk)
    (job,) = jobs_read([job])
    return render(
        request,
        "jobs/detail.html",
        {"job": job, "failures": job.failures.all()[:500], "unmatched": job.unmatched_spans.all()[:500]},
    )
