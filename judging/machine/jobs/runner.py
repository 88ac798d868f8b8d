"""Running an LLM job: the main thread owns the database, worker threads only wait on HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone

from core.wording import plural
from judging.clients.llm import ChatResult, LlmClient, LlmError, cost_usd, get_client
from judging.machine.jobs.base import (
    PROGRESS_EVERY_S,
    CallRequest,
    JobContext,
    Steps,
    Task,
    Unit,
    call_key,
    judge_job_fail,
    judge_job_finish,
    judge_job_save_progress,
)
from judging.machine.jobs.llm_tasks import task_for
from judging.machine.jobs.nli_runner import nli_job_run
from judging.machine.jobs.start import NLI_TASKS
from judging.machine.llm_judges import UnparsableAnswer
from judging.models import JudgeJob, LlmCall, LlmFailure


@dataclass
class _Running:
    unit: Unit
    steps: Steps
    request: CallRequest
    key: str


def judge_job_run(
    *,
    job: JudgeJob,
    client: LlmClient | None = None,
    progress: Callable[[JudgeJob], None] | None = None,
) -> JudgeJob:
    """Run (or resume) a job to its end; every answer is saved as it arrives, and every label as it
    arrives or (tasks that buffer them: `Task.flush`) with the job's progress, about once a second.

    Units are walked from the start on every run: those answered before come back from the cache at
    no cost, so a resumed job repeats no paid call and ends with the same labels as an unbroken one.
    NLI jobs go to `nli_job_run`, which skips what is stored in the same way.
    """
    if job.task in NLI_TASKS:
        return nli_job_run(job=job, progress=progress)
    client = client or get_client()
    task = task_for(job.task)
    ctx = JobContext(job=job, judge=job.judge)
    plan = task.plan(job.collection, job.options)
    LlmFailure.objects.filter(job=job).delete()
    job.units_total, job.units_done, job.units_failed = len(plan.units), 0, 0
    job.status, job.error, job.finished_at = JudgeJob.Status.RUNNING, "", None
    job.started_at = job.started_at or timezone.now()
    job.save()

    units = iter(plan.units)
    in_flight: dict[Future[tuple[ChatResult, float]], _Running] = {}
    # Units whose next call is one already in flight (the same prompt from another unit: the same
    # sentence citing the same passage in two runs, say), by its key: they take its answer when it comes,
    # as from the cache, rather than pay for a second call whose row get_or_create would then drop.
    waiting: dict[str, list[tuple[Unit, Steps]]] = {}
    last_saved = time.monotonic()

    def call(request: CallRequest) -> tuple[ChatResult, float]:
        started = time.monotonic()
        result = client.chat(
            model=job.model,
            messages=[{"role": "user", "content": request.prompt}],
            temperature=request.temperature,
            max_tokens=request.max_tokens,
        )
        return result, time.monotonic() - started

    def save_when_due() -> None:
        nonlocal last_saved
        if time.monotonic() - last_saved >= PROGRESS_EVERY_S:
            task.flush(ctx)
            judge_job_save_progress(job)
            last_saved = time.monotonic()

    def finish_unit() -> None:
        job.units_done += 1
        if progress is not None:
            progress(job)
        save_when_due()

    def advance(unit: Unit, steps: Steps, answer: str | None) -> None:
        """Feed answers to a unit until it needs a call the cache does not hold, or is done."""
        try:
            request = next(steps) if answer is None else steps.send(answer)
            while True:
                key = call_key(job.model, request)
                if key in waiting:
                    waiting[key].append((unit, steps))
                    return
                cached = LlmCall.objects.filter(key=key).values_list("answer", flat=True).first()
                if cached is None:
                    waiting[key] = []
                    in_flight[pool.submit(call, request)] = _Running(unit, steps, request, key)
                    return
                job.cache_hits += 1
                answer = cached
                request = steps.send(cached)
        except StopIteration:
            finish_unit()
        except UnparsableAnswer as exc:
            ctx.fail(unit, f"unparsable answer: {exc}", answer or "")
            job.units_failed += 1
            finish_unit()

    with ThreadPoolExecutor(max_workers=job.concurrency, thread_name_prefix=f"llm-job-{job.pk}") as pool:
        try:
            exhausted = False
            while True:
                # Keep every worker busy, and only a little more in memory than the workers can take.
                while not exhausted and len(in_flight) < 2 * job.concurrency:
                    unit = next(units, None)
                    if unit is None:
                        exhausted = True
                        break
                    advance(unit, task.steps(ctx, unit), None)
                if not in_flight:
                    break
                # Woken at least every PROGRESS_EVERY_S: while calls are slow the job still shows it lives.
                done, _ = wait(list(in_flight), timeout=PROGRESS_EVERY_S, return_when=FIRST_COMPLETED)
                save_when_due()
                for future in done:
                    running = in_flight.pop(future)
                    sharing = waiting.pop(running.key, [])
                    try:
                        result, latency = future.result()
                    except LlmError as exc:
                        for unit, _steps in [(running.unit, running.steps), *sharing]:
                            ctx.fail(unit, f"LLM call failed after {plural(exc.attempts, 'attempt')}: {exc}")
                            job.units_failed += 1
                            finish_unit()
                        continue
                    _call_save(job, running, result, latency)
                    advance(running.unit, running.steps, result.text)
                    for unit, steps in sharing:
                        job.cache_hits += 1
                        advance(unit, steps, result.text)
        except BaseException as exc:
            # Killed or broken: cancel what has not started, keep what was paid for, stay resumable.
            pool.shutdown(wait=False, cancel_futures=True)
            _flush_on_failure(task, ctx)
            judge_job_fail(job, exc)
            raise
    task.flush(ctx)
    return judge_job_finish(
        job,
        nothing="" if plan.units else plan.nothing_to_judge(),
        skipped=plan.skipped,
        skipped_reason=plan.skipped_reason,
    )


def _flush_on_failure(task: Task, ctx: JobContext) -> None:
    """Keep the labels of the units that finished before the failure, if the database still takes them;
    if not, a resumed job writes them again from its cached answers."""
    try:
        task.flush(ctx)
    except Exception:  # the failure being handled is the one to report
        ctx.pending.clear()


def _call_save(job: JudgeJob, running: _Running, result: ChatResult, latency: float) -> None:
    cost = cost_usd(result.model, result.input_tokens, result.output_tokens) or cost_usd(
        job.model, result.input_tokens, result.output_tokens
    )
    cost_dec = Decimal(str(round(cost, 6)))
    # get_or_create: another job may have paid for the same prompt at the same moment; one answer is kept.
    LlmCall.objects.get_or_create(
        key=running.key,
        defaults={
            "model": job.model,
            "prompt_version": running.request.prompt_version,
            "prompt": running.request.prompt,
            "params": running.request.params(),
            "answer": result.text,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "cost_usd": cost_dec,
            "latency_ms": int(latency * 1000),
            "job": job,
        },
    )
    job.calls_made += 1
    job.input_tokens += result.input_tokens
    job.output_tokens += result.output_tokens
    job.cost_usd = Decimal(job.cost_usd) + cost_dec
