"""Organiser pages for judge jobs (LLM and NLI): start one, and watch every job's progress, calls and cost."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Judge
from annotation.permissions import organiser_required
from annotation.typed import choice_field
from core.names import named
from core.ordering import natural_key
from judging.clients.llm import default_model
from judging.clients.nli import default_model as nli_default_model
from judging.machine.jobs import NLI_TASKS, JobError, job_options, judge_job_start
from judging.machine.jobs.state import jobs_read
from judging.machine.tasks import judge_job_queue, judge_job_resume
from judging.models import JudgeJob

LLM_TASKS = [t.value for t in JudgeJob.Task if t.value not in NLI_TASKS]
ALL_TASKS = [t.value for t in JudgeJob.Task]
# TREC RAG nugget labels: per nugget (importance) or per answer and nugget (assignment) of a nugget judge's lists.
NUGGET_LABEL_TASKS: list[str] = [JudgeJob.Task.IMPORTANCE, JudgeJob.Task.ASSIGNMENT]
# Tasks over each turn's passages or nuggets, whatever the runs.
PER_TURN_TASKS = (JudgeJob.Task.NUGGETS_CREATE, JudgeJob.Task.IMPORTANCE)

# Which fields each task reads; the page shows only these, and the form ignores the rest.
TASK_FIELDS: dict[str, list[str]] = {
    "model": ALL_TASKS,
    "turns": ALL_TASKS,
    "runs": [t for t in ALL_TASKS if t not in (JudgeJob.Task.DEDUP, *PER_TURN_TASKS)],
    "depth": [JudgeJob.Task.RELEVANCE],
    "source": [JudgeJob.Task.NUGGETS],
    "relevance_judge": [JudgeJob.Task.NUGGETS, JudgeJob.Task.NUGGETS_CREATE],
    "min_grade": [JudgeJob.Task.NUGGETS, JudgeJob.Task.NUGGETS_CREATE],
    "max_nuggets": [JudgeJob.Task.NUGGETS_CREATE],
    "window": [JudgeJob.Task.NUGGETS_CREATE, *NUGGET_LABEL_TASKS],
    "nuggets_judge": NUGGET_LABEL_TASKS,
    "gold_judge": [JudgeJob.Task.NTR, JudgeJob.Task.NTN],
    "response_nugget_judge": [JudgeJob.Task.NTN],
    "source_judge": [JudgeJob.Task.DEDUP],
    "threshold": [JudgeJob.Task.NTN, JudgeJob.Task.DEDUP],
    "exact_only": [JudgeJob.Task.DEDUP],
    "concurrency": LLM_TASKS,
}
# The judges a task needs named, and what the error says when one is missing.
REQUIRED_JUDGES: dict[str, dict[str, str]] = {
    JudgeJob.Task.NTR: {"gold_judge": "the judge whose gold nuggets to match"},
    JudgeJob.Task.NTN: {
        "gold_judge": "the judge of the gold nuggets",
        "response_nugget_judge": "the judge of the response nuggets",
    },
    JudgeJob.Task.DEDUP: {"source_judge": "the judge whose nuggets to de-duplicate"},
    JudgeJob.Task.IMPORTANCE: {"nuggets_judge": "the judge whose nuggets to label"},
    JudgeJob.Task.ASSIGNMENT: {"nuggets_judge": "the judge whose nuggets to match the answers against"},
}


def _judges_with(task: str, collection: Collection | None) -> QuerySet[Judge]:
    # No collection chosen (an unknown name): no list, rather than every collection's judges.
    if collection is None:
        return Judge.objects.none()
    return judges_with_labels(collection=collection, task=task)


def _task_judges(collection: Collection | None) -> dict[str, list[str]]:
    """{task: names of the machine judges with jobs of it on the collection}, in one query."""
    if collection is None:
        return {}
    rows = (
        JudgeJob.objects.filter(collection=collection, judge__kind__in=[Judge.Kind.LLM, Judge.Kind.NLI])
        .values_list("task", "judge__name", "judge__kind")
        .distinct()
        .order_by("judge__name")
    )
    names: dict[str, list[str]] = {}
    for task, name, kind in rows:
        if kind == (Judge.Kind.NLI if task in NLI_TASKS else Judge.Kind.LLM):
            names.setdefault(task, []).append(name)
    return names


NO_LLM_ENDPOINT = (
    "No LLM endpoint is configured: set OPENAI_API_KEY (OpenAI), OPENAI_BASE_URL (an OpenAI-compatible "
    "server: vLLM, Ollama, llama.cpp) or AZURE_OPENAI_ENDPOINT with OPENAI_API_KEY, and restart the server. "
    "NLI tasks (ntn, dedup) need none."
)


def llm_endpoint_configured() -> bool:
    """Whether LLM jobs have somewhere to send their calls (the client's own rule, read from settings)."""
    return bool(
        getattr(settings, "OPENAI_API_KEY", "")
        or getattr(settings, "OPENAI_BASE_URL", "")
        or getattr(settings, "AZURE_OPENAI_ENDPOINT", "")
    )


class JobStartForm(forms.Form):
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.order_by("name"), to_field_name="name", empty_label=None
    )
    task = forms.ChoiceField(choices=JudgeJob.Task.choices)
    judge_name = forms.CharField(
        max_length=200,
        label="Judge name",
        help_text="The machine judge whose labels the job writes: a new name, or one of the task's judges to "
        "resume or extend its labels.",
    )
    model = forms.CharField(
        max_length=500,
        required=False,
        help_text="LLM tasks: default OPENAI_MODEL. ntn, dedup: NLI model folder or hub id, default NLI_MODEL.",
    )
    turns = forms.CharField(required=False, help_text="Turn ids separated by spaces; empty for all.")
    runs = forms.CharField(required=False, help_text="Run names separated by spaces; empty for all.")
    depth = forms.IntegerField(min_value=1, initial=30, required=False, help_text="Each run's top DEPTH.")
    source = forms.ChoiceField(
        choices=[("passages", "relevant passages (gold nuggets)"), ("responses", "the runs' responses")],
        initial="passages",
        required=False,
        help_text="Where nuggets are extracted from.",
    )
    relevance_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        empty_label="any judge's grades",
        help_text="From passages: whose relevance grades pick the passages.",
    )
    min_grade = forms.IntegerField(
        min_value=0,
        max_value=4,
        required=False,
        # Empty by default: the task's own default applies, as in the judge command.
        widget=forms.NumberInput(attrs={"placeholder": "2; nuggets-create: 1"}),
        help_text="From passages: lowest relevant grade (empty: 2, or 1 for nuggets-create).",
    )
    max_nuggets = forms.IntegerField(
        min_value=1, max_value=200, initial=30, required=False, help_text="Longest nugget list of a turn."
    )
    window = forms.IntegerField(
        min_value=1,
        max_value=100,
        initial=10,
        required=False,
        help_text="nuggets-create: passages read per call; importance, assignment: nuggets labelled per call.",
    )
    nuggets_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        help_text="Judge of the nugget lists to label (created, or post-edited by an assessor).",
    )
    gold_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        help_text="Judge of the gold nuggets.",
    )
    response_nugget_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        help_text="Judge of the nuggets of the responses.",
    )
    source_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(),
        to_field_name="name",
        required=False,
        help_text="Judge whose nuggets to de-duplicate.",
    )
    threshold = forms.FloatField(
        min_value=0.0, max_value=1.0, required=False, help_text="Entailment threshold; default NLI_THRESHOLD."
    )
    exact_only = forms.BooleanField(required=False, help_text="Exact duplicates only, no NLI model.")
    concurrency = forms.IntegerField(
        min_value=1, max_value=256, required=False, help_text="LLM calls in flight."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        collection = self._collection()
        self._task_judges = _task_judges(collection)
        relevance = _judges_with("relevance", collection)
        nuggets = _judges_with("nuggets", collection)
        choice_field(self, "relevance_judge").queryset = relevance
        for name in ("gold_judge", "response_nugget_judge", "source_judge", "nuggets_judge"):
            choice_field(self, name).queryset = nuggets
        task = self.data.get("task") if self.is_bound else None
        if task in ALL_TASKS:
            # What another task would read is not this job's input: neither validated nor kept.
            for name, tasks in TASK_FIELDS.items():
                if task not in tasks:
                    self.fields[name].disabled = True

    @property
    def rows(self) -> list[tuple[forms.BoundField, str]]:
        """Each field with the tasks it belongs to, so the page shows only the chosen task's fields."""
        return [(self[name], " ".join(TASK_FIELDS.get(name, ALL_TASKS))) for name in self.fields]

    def _collection(self) -> Collection | None:
        """The chosen collection (posted, or asked for in the query string): its judges fill the lists."""
        name = self.data.get("collection") if self.is_bound else None
        name = name or self.initial.get("collection")
        if isinstance(name, Collection):
            return name
        return named(Collection.objects.all(), name).first() if name else None

    def task_judges(self, task: str) -> list[str]:
        """Machine judges that ran this task on the chosen collection: the names the judge field suggests
        (any other name starts a new judge)."""
        return self._task_judges.get(task, [])

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        task = data.get("task")
        if not task:
            return data
        for name, tasks in TASK_FIELDS.items():
            if task not in tasks:
                data[name] = self.fields[name].to_python(None) if name != "exact_only" else False
        for name, what in REQUIRED_JUDGES.get(task, {}).items():
            if data.get(name) is None and name not in self.errors:
                self.add_error(name, f"the {task} task needs {what}")
        return data

    def options(self) -> dict[str, Any]:
        """The job's options, shaped by the same function as the judge command's, so the same work
        started from either resumes the same job."""
        data = self.cleaned_data
        values = {
            **data,
            "turns": (data["turns"] or "").split(),
            "runs": (data["runs"] or "").split(),
            **{
                name: data[name].name if data.get(name) is not None else ""
                for name in (
                    "relevance_judge",
                    "gold_judge",
                    "response_nugget_judge",
                    "source_judge",
                    "nuggets_judge",
                )
            },
        }
        return job_options(data["task"], values)


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
            "llm_configured": llm_endpoint_configured(),
            # `make run` points OPENAI_BASE_URL at its loopback fake: the page says so, its labels mean nothing.
            "llm_fake_url": settings.OPENAI_BASE_URL if "llm" in settings.LOCAL_FAKES else "",
            "llm_tasks": " ".join(LLM_TASKS),
            "task_judges": [(task, form.task_judges(task)) for task in ALL_TASKS],
        },
        status=status,
    )


@organiser_required
def job_list(request: HttpRequest) -> HttpResponse:
    # ?collection=…&task=… (the form's "show" button, or jobs.js when the collection changes) fills the
    # judge lists with that collection's judges; reading the page creates nothing.
    initial: dict[str, Any] = {
        "depth": 30,
        "source": "passages",
        "max_nuggets": 30,
        "window": 10,
    }
    first = Collection.objects.order_by("name").first()
    name = request.GET.get("collection")
    initial["collection"] = named(Collection.objects.all(), name).first() if name else first
    if request.GET.get("task") in ALL_TASKS:
        initial["task"] = request.GET["task"]
    return _page(request, JobStartForm(initial=initial))


@organiser_required
@require_POST
def job_start(request: HttpRequest) -> HttpResponse:
    form = JobStartForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    if data["task"] in LLM_TASKS and not llm_endpoint_configured():
        form.add_error(None, NO_LLM_ENDPOINT)
        return _page(request, form, status=400)
    try:
        # The job and its task commit together: no job is left waiting for a task never queued. A task
        # worker runs it, never this request, so a restart of the web server does not touch it.
        with transaction.atomic():
            job = judge_job_start(
                collection=data["collection"],
                task=data["task"],
                judge_name=data["judge_name"],
                model=data["model"],
                options=form.options(),
                concurrency=data["concurrency"] or int(getattr(settings, "LLM_CONCURRENCY", 8)),
                user=request.user,
            )
            job = judge_job_queue(job=job)
    except JobError as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=400)
    messages.success(request, f"Job {job.pk} started: {job.get_task_display()} by {job.judge.name}.")
    return redirect("judging:job-detail", pk=job.pk)


@organiser_required
@require_POST
def job_resume(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(JudgeJob, pk=pk)
    try:
        judge_job_resume(job=job)
    except JobError as exc:
        messages.error(request, str(exc))
        return redirect("judging:job-detail", pk=job.pk)
    messages.success(request, f"Job {job.pk} queued again: it resumes from what is stored.")
    return redirect("judging:job-detail", pk=job.pk)


@organiser_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    (read,) = jobs_read([get_object_or_404(JudgeJob.objects.select_related("collection", "judge"), pk=pk)])
    job = read.job
    context = {
        "job": job,
        "read": read,
        "options": _options_shown(job.options),
        "failures": job.failures.all()[:500],
        "unmatched": job.unmatched_spans.all()[:500],
    }
    return render(request, "jobs/detail.html", context)


def _options_shown(options: dict[str, Any]) -> list[tuple[str, str]]:
    """A job's options as (name, text) rows for the page: lists (turns, runs) as comma-separated values."""

    def text(value: object) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value) if value != "" else "none"

    # Turns in reading order (2_1 before 10_1). The job keeps them sorted as text, since resuming compares
    # that stored list, so only the page reorders them.
    shown = (
        {**options, "turns": sorted(options["turns"], key=natural_key)} if options.get("turns") else options
    )
    # By name: PostgreSQL's jsonb keeps no key order, so the page reads the same on either database.
    return [(name, text(value)) for name, value in sorted(shown.items())]
