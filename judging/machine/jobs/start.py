"""Starting and estimating a job: its options and model, its judge, the unfinished job to resume."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.judge_access import ImportJudgeRefused
from annotation.models import (
    Collection,
    Judge,
)
from annotation.services import judge_get_or_create
from core.wording import plural
from judging.clients import nli as nli_client
from judging.clients.llm import cost_usd, price_per_million
from judging.clients.llm import default_model as llm_default_model
from judging.machine.jobs.base import (
    CHARS_PER_TOKEN,
    JobError,
    batches,
    call_key,
    chosen_runs_filter,
    chosen_turns,
    no_judge_named,
)
from judging.machine.jobs.llm_tasks import task_for
from judging.machine.nli import (
    NliJobError,
    nli_judge_get_or_create,
)
from judging.models import JudgeJob, LlmCall


@dataclass
class Estimate:
    units: int
    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    skipped: int
    priced: bool

    def __str__(self) -> str:
        price = f"${self.cost_usd:.4f}" if self.priced else "unknown (no price for this model in LLM_PRICES)"
        text = (
            f"{plural(self.units, 'unit')}: {plural(self.calls, 'call')} to make, {self.cached} answered from "
            f"the cache; about {self.input_tokens} input and {plural(self.output_tokens, 'output token')}; "
            f"estimated cost {price}"
        )
        return text + (f"; {plural(self.skipped, 'unit')} skipped" if self.skipped else "")


def job_estimate(*, collection: Collection, task: str, model: str, options: dict[str, Any]) -> Estimate:
    """What a job would cost: the calls of each unit not in the cache (nugget follow-ups come on top).
    Units are read a batch at a time, as a run reads them."""
    task_obj = task_for(task)
    plan = task_obj.plan(collection, options)
    calls = cached = input_tokens = 0
    for batch in batches(plan.units):
        batch = task_obj.load(collection, batch)
        requests = [task_obj.first_request(u) for u in batch]
        keys = [call_key(model, r) for r in requests]
        stored = _cached_keys(keys)
        # A unit whose first call is cached is taken to be cached whole (its later prompts hang on answers).
        for unit, request, key in zip(batch, requests, keys, strict=True):
            count = 1 + task_obj.calls_after_first(unit)
            if key in stored:
                cached += count
            else:
                calls += count
                input_tokens += (len(request.prompt) // CHARS_PER_TOKEN + 8) * count
    output_tokens = task_obj.expected_output_tokens * calls
    return Estimate(
        units=len(plan.units),
        calls=calls,
        cached=cached,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost_usd(model, input_tokens, output_tokens),
        skipped=plan.skipped,
        priced=price_per_million(model) is not None,
    )


def _cached_keys(keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), 2000):
        found.update(LlmCall.objects.filter(key__in=keys[start : start + 2000]).values_list("key", flat=True))
    return found


def llm_judge_get_or_create(*, name: str, model: str, prompt_version: str) -> Judge:
    """The LLM judge named `name`; one judge's labels come from one model and one prompt version."""
    try:
        judge = judge_get_or_create(
            name=name, kind=Judge.Kind.LLM, model=model, prompt_version=prompt_version
        )
    except ImportJudgeRefused as exc:
        raise JobError(str(exc)) from None
    if (judge.kind, judge.model, judge.prompt_version) != (Judge.Kind.LLM, model, prompt_version):
        raise JobError(
            f"judge {name!r} is a {judge.kind} judge with model {judge.model!r} and prompt "
            f"{judge.prompt_version!r}; name a new judge for {model!r} with {prompt_version!r}"
        )
    return judge


NLI_TASKS = frozenset({JudgeJob.Task.NTN.value, JudgeJob.Task.DEDUP.value})


def job_options(task: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Only what changes a job's work, shaped alike from the commands and the page, so the same work
    started again from either finds the same unfinished job and resumes it."""
    options: dict[str, Any] = {}
    if values.get("turns"):
        options["turns"] = sorted(values["turns"])
    if values.get("runs"):
        options["runs"] = sorted(values["runs"])
    if task == JudgeJob.Task.RELEVANCE:
        options["depth"] = int(values.get("depth") or 30)
    elif task == JudgeJob.Task.NUGGETS:
        options["source"] = values.get("source") or "passages"
        if options["source"] == "passages":
            min_grade = values.get("min_grade")
            options["min_grade"] = 2 if min_grade is None else int(min_grade)
            if values.get("relevance_judge"):
                options["relevance_judge"] = values["relevance_judge"]
    elif task == JudgeJob.Task.NUGGETS_CREATE:
        options["min_grade"] = _number(values, "min_grade", 1)
        if values.get("relevance_judge"):
            options["relevance_judge"] = values["relevance_judge"]
        options["max_nuggets"] = _number(values, "max_nuggets", 30)
        options["window"] = _number(values, "window", 10)
    elif task in (JudgeJob.Task.IMPORTANCE, JudgeJob.Task.ASSIGNMENT):
        options["nuggets_judge"] = values.get("nuggets_judge") or ""
        options["window"] = _number(values, "window", 10)
    elif task == JudgeJob.Task.NTR:
        options["gold_judge"] = values.get("gold_judge") or ""
    elif task == JudgeJob.Task.NTN:
        options["gold_judge"] = values.get("gold_judge") or ""
        options["response_nugget_judge"] = values.get("response_nugget_judge") or ""
    elif task == JudgeJob.Task.DEDUP:
        options["source_judge"] = values.get("source_judge") or ""
        if values.get("exact_only"):
            options["exact_only"] = True
    if task in NLI_TASKS and not options.get("exact_only"):
        # The threshold decides the labels, so the job records the one in force when it started.
        threshold = values.get("threshold")
        options["threshold"] = nli_client.default_threshold() if threshold is None else float(threshold)
        # Kept when 0 too, so that the start refuses it instead of running at the default size.
        if values.get("batch_size") is not None:
            options["batch_size"] = int(values["batch_size"])
    return options


def _number(values: Mapping[str, Any], name: str, default: int) -> int:
    value = values.get(name)
    return default if value is None else int(value)


def job_model(task: str, model: str | None, options: Mapping[str, Any]) -> str:
    """The model a job names: the LLM (default OPENAI_MODEL) or the NLI model as its judge records it."""
    if task not in NLI_TASKS:
        return model or llm_default_model()
    if options.get("exact_only"):
        return ""
    # The NLI client names a local model by its resolved folder; the judge must carry the same name.
    name = model or nli_client.default_model()
    folder = Path(name).expanduser()
    return str(folder.resolve()) if folder.is_dir() else name


def required_judge(name: str | None, what: str) -> Judge:
    """The judge named `name`; a JobError when no name is given (`what` says which judge the job needs)
    or no judge has it."""
    if not name:
        raise JobError(f"the job needs {what}")
    try:
        return Judge.objects.get(name=name)
    except Judge.DoesNotExist:
        raise no_judge_named(name) from None


def _nli_job_judge(
    *, collection: Collection, task: str, judge_name: str, model: str, options: Mapping[str, Any]
) -> Judge:
    """Check an NLI job's inputs now, not in a worker, and give the judge its labels go to."""
    chosen_turns(collection, options.get("turns"))
    threshold = options.get("threshold")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise JobError("the threshold must be between 0 and 1")
    if options.get("batch_size") is not None and options["batch_size"] < 1:
        raise JobError("the batch size must be at least 1")
    if task == JudgeJob.Task.NTN:
        required_judge(options.get("gold_judge"), "the judge of the gold nuggets (--gold-judge)")
        required_judge(
            options.get("response_nugget_judge"),
            "the judge of the response nuggets (--response-nugget-judge)",
        )
        chosen_runs_filter(collection, options.get("runs"))
        description = f"NtN matching by NLI: entails when P(entailment) >= {threshold}"
    else:
        if options.get("runs"):
            raise JobError("dedup works on a judge's whole nugget set per turn: runs do not apply")
        source = required_judge(options.get("source_judge"), "the judge whose nuggets to de-duplicate")
        if source.name == judge_name:
            raise JobError("the de-duplicated set needs its own judge: choose another judge name")
        rule = (
            "exact duplicates"
            if options.get("exact_only")
            else f"exact, then mutual entailment >= {threshold}"
        )
        description = f"De-duplicated {source.name} ({rule}); the earliest key survives."
    try:
        return nli_judge_get_or_create(name=judge_name, model=model, description=description)
    except NliJobError as exc:
        raise JobError(str(exc)) from None


@transaction.atomic
def judge_job_start(
    *,
    collection: Collection,
    task: str,
    judge_name: str,
    model: str,
    options: dict[str, Any],
    concurrency: int,
    user: Any = None,
) -> JudgeJob:
    """A job for this work: the unfinished one with the same parameters (to resume it) or a new one.

    `model` may be empty for the task's default (OPENAI_MODEL, NLI_MODEL); NLI jobs run one turn at a time.
    """
    model = job_model(task, model, options)
    if task in NLI_TASKS:
        judge = _nli_job_judge(
            collection=collection, task=task, judge_name=judge_name, model=model, options=options
        )
        prompt_version, concurrency = "", 1
    else:
        task_obj = task_for(task)
        task_obj.plan(collection, options)  # fail now on unknown turns, runs or judges, not in a worker
        prompt_version = task_obj.prompt_version
        judge = llm_judge_get_or_create(name=judge_name, model=model, prompt_version=prompt_version)
    unfinished = (
        JudgeJob.objects.select_for_update()
        .filter(collection=collection, judge=judge, task=task, model=model, options=options)
        .exclude(status=JudgeJob.Status.DONE)
        .order_by("-id")
        .first()
    )
    if unfinished is not None:
        if unfinished.concurrency != concurrency:
            unfinished.concurrency = concurrency
            unfinished.save(update_fields=["concurrency", "updated_at"])
        return unfinished
    return JudgeJob.objects.create(
        collection=collection,
        judge=judge,
        task=task,
        model=model,
        prompt_version=prompt_version,
        options=options,
        concurrency=concurrency,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
