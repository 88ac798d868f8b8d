"""Running an LLM job: the main thread owns the database, worker threads only wait on HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
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
    batches,
    call_key,
    judge_job_fail,
    judge_job_finish,
    judge_job_save_progress,
    llm_calls_save,
)
from judging.machine.jobs.llm_tasks import task_for
from judging.machine.jobs.nli_runner import nli_job_run
from judging.machine.jobs.start import NLI_TASKS
from judging.machine.jobs.state import CallTotals, call_totals, totals_apply
from judging.machine.llm_judges import UnparsableAnswer
from judging.models import JudgeJob, LlmCall, LlmFailure


@dataclass
class _Running:
    unit: Unit
    steps: Steps
    request: CallRequest
    key: str


# Answers and the labels they give are committed together at least this often (and on every progress save):
# one statement each for a batch instead of a round trip per call, while a job killed outright loses at
# most this long's answers besides the calls then in flight; a slow job still saves each answer as it comes.
SAVE_EVERY_S = 0.1


def judge_job_run(
    *,
    job: JudgeJob,
    client: LlmClient | None = None,
    progress: Callable[[JudgeJob], None] | None = None,
) -> JudgeJob:
    """Run (or resume) a job to its end; answers, and the labels they give, are saved together many at a
    time, at least every SAVE_EVERY_S (`Task.flush` writes the labels), and the job's progress about once a
    second.

    Units are walked from the start on every run: those answered before come back from the cache at
    no cost, so a resumed job repeats no paid call and ends with the same labels as an unbroken one. They are
    made ready a batch at a time (`Task.load`, LOAD_BATCH), and a batch's first calls are looked up in the
    cache in one query, so neither memory nor round trips grow per unit.
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
    # The totals of the rows saved before (a resumed job); those of the rows this run saves are added to
    # them as it saves them, so its progress saves count no rows.
    totals_apply(job, call_totals([job.pk]).get(job.pk))
    job.save()

    in_flight: dict[Future[tuple[ChatResult, float]], _Running] = {}
    # Units whose next call is one already in flight (the same prompt from another unit: the same
    # sentence citing the same passage in two runs, say), by its key: they take its answer when it comes,
    # as from the cache, rather than pay for a second call whose row would then be dropped.
    waiting: dict[str, list[tuple[Unit, Steps]]] = {}
    # The cache's answers to the current batch's first calls (None: not in the cache), read in one query;
    # and the answers this run got since that query, which it may not have seen.
    known: dict[str, str | None] = {}
    recent: dict[str, str] = {}
    answered: list[LlmCall] = []  # answered calls not yet saved
    last_saved = last_progress = time.monotonic()

    def loaded() -> Iterator[Unit]:
        for batch in batches(plan.units):
            batch = task.load(job.collection, batch)
            keys = [call_key(job.model, task.first_request(unit)) for unit in batch]
            # What was answered and saved before this query, the query finds; what is not saved yet stays.
            recent.clear()
            recent.update((call.key, call.answer) for call in answered)
            known.clear()
            known.update(dict.fromkeys(keys))
            known.update(LlmCall.objects.filter(key__in=keys).values_list("key", "answer"))
            yield from batch

    def call(request: CallRequest) -> tuple[ChatResult, float]:
        started = time.monotonic()
        result = client.chat(
            model=job.model,
            messages=[{"role": "user", "content": request.prompt}],
            temperature=request.temperature,
            max_tokens=request.max_tokens,
        )
        return result, time.monotonic() - started

    def save() -> None:
        """Commit the answers and the labels of the units they finished together, in one transaction."""
        nonlocal last_saved
        with transaction.atomic():
            saved = llm_calls_save(calls=answered)
            task.flush(ctx)
        answered.clear()
        _totals_add(job, saved)
        last_saved = time.monotonic()

    def save_when_due() -> None:
        nonlocal last_progress
        now = time.monotonic()
        if now - last_saved >= SAVE_EVERY_S:
            save()
        if now - last_progress >= PROGRESS_EVERY_S:
            judge_job_save_progress(job, recount=False)
            last_progress = time.monotonic()

    def finish_unit() -> None:
        job.units_done += 1
        if progress is not None:
            progress(job)

    def cached(key: str) -> str | None:
        if key in recent:
            return recent[key]
        if key in known:
            return known.pop(key)
        return LlmCall.objects.filter(key=key).values_list("answer", flat=True).first()

    def advance(unit: Unit, steps: Steps, answer: str | None) -> None:
        """Feed answers to a unit until it needs a call the cache does not hold, or is done."""
        try:
            request = next(steps) if answer is None else steps.send(answer)
            while True:
                key = call_key(job.model, request)
                if key in waiting:
                    waiting[key].append((unit, steps))
                    return
                stored = cached(key)
                if stored is None:
                    waiting[key] = []
                    future = pool.submit(call, request)
                    in_flight[future] = _Running(unit, steps, request, key)
                    return
                job.cache_hits += 1
                answer = stored
                request = steps.send(stored)
        except StopIteration:
            finish_unit()
        except UnparsableAnswer as exc:
            ctx.fail(unit, f"unparsable answer: {exc}", answer or "")
            job.units_failed += 1
            finish_unit()

    units = loaded()
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
                    save_when_due()
                if not in_flight:
                    break
                done, _ = wait(list(in_flight), timeout=SAVE_EVERY_S, return_when=FIRST_COMPLETED)
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
                    answered.append(_call_row(job, running, result, latency))
                    recent[running.key] = result.text
                    advance(running.unit, running.steps, result.text)
                    for unit, steps in sharing:
                        job.cache_hits += 1
                        advance(unit, steps, result.text)
                save_when_due()
        except BaseException as exc:
            # Killed or broken: cancel what has not started, keep what was paid for, stay resumable.
            pool.shutdown(wait=False, cancel_futures=True)
            _save_on_failure(task, ctx, answered)
            judge_job_fail(job, exc)
            raise
    save()
    return judge_job_finish(
        job,
        nothing="" if plan.units else plan.nothing_to_judge(),
        skipped=plan.skipped,
        skipped_reason=plan.skipped_reason,
    )


def _totals_add(job: JudgeJob, saved: CallTotals) -> None:
    job.calls_made += saved.calls
    job.input_tokens += saved.input_tokens
    job.output_tokens += saved.output_tokens
    job.cost_usd = Decimal(job.cost_usd) + saved.cost_usd


def _save_on_failure(task: Task, ctx: JobContext, answered: list[LlmCall]) -> None:
    """Keep the answers paid for and the labels of the units that finished before the failure, if the
    database still takes them; if not, a resumed job pays again for those answers only."""
    try:
        with transaction.atomic():
            llm_calls_save(calls=answered)
            task.flush(ctx)
    except Exception:  # the failure being handled is the one to report
        ctx.pending.clear()


def _call_row(job: JudgeJob, running: _Running, result: ChatResult, latency: float) -> LlmCall:
    cost = cost_usd(result.model, result.input_tokens, result.output_tokens) or cost_usd(
        job.model, result.input_tokens, result.output_tokens
    )
    return LlmCall(
        key=running.key,
        model=job.model,
        prompt_version=running.request.prompt_version,
        prompt=running.request.prompt,
        params=running.request.params(),
        answer=result.text,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cost_usd=Decimal(str(round(cost, 6))),
        latency_ms=int(latency * 1000),
        job=job,
    )
