"""Running an NLI job (ntn, dedup) one turn at a time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from django.utils import timezone

from annotation.models import (
    Judge,
    Nugget,
    Turn,
)
from judging.machine.jobs.base import chosen_turns, judge_job_fail, judge_job_finish, judge_job_save_progress
from judging.machine.jobs.start import required_judge
from judging.machine.nli import (
    DedupResult,
    NtnMatchResult,
    ntn_match,
    nugget_text_normalise,
    nuggets_dedup,
)
from judging.models import JudgeJob


def _dedup_pairs(source: Judge, turn: Turn, exact_only: bool) -> int:
    """How many pairs de-duplicating this turn scores: every ordered pair of its distinct texts
    (judging.machine.nli.nugget_duplicates_find), none when only exact duplicates are sought."""
    if exact_only:
        return 0
    texts = Nugget.objects.filter(judge=source, turn=turn).values_list("text", flat=True)
    distinct = len({nugget_text_normalise(text) for text in texts})
    return distinct * (distinct - 1)


def nli_job_run(*, job: JudgeJob, progress: Callable[[JudgeJob], None] | None = None) -> JudgeJob:
    """Run (or resume) an NtN or de-duplication job one turn at a time, saving progress after each turn.

    The services skip what is stored (pairs already scored, turns already de-duplicated), so a killed job
    run again scores only what it had not reached.
    """
    options = job.options
    turns = chosen_turns(job.collection, options.get("turns"))
    job.units_total, job.units_done, job.units_failed = len(turns), 0, 0
    job.status, job.error, job.summary, job.finished_at = JudgeJob.Status.RUNNING, "", "", None
    job.started_at = job.started_at or timezone.now()
    job.save()
    model = job.model or None
    threshold, batch_size = options.get("threshold"), options.get("batch_size")
    tally: NtnMatchResult | DedupResult
    try:
        if job.task == JudgeJob.Task.NTN:
            tally = NtnMatchResult()
            gold = required_judge(options.get("gold_judge"), "the judge of the gold nuggets")
            premises = required_judge(
                options.get("response_nugget_judge"), "the judge of the response nuggets"
            )
        else:
            tally = DedupResult()
            source = required_judge(options.get("source_judge"), "the judge whose nuggets to de-duplicate")
        for turn in turns:
            result: NtnMatchResult | DedupResult
            if job.task == JudgeJob.Task.NTN:
                result = ntn_match(
                    collection=job.collection,
                    gold_judge=gold,
                    response_nugget_judge=premises,
                    judge_name=job.judge.name,
                    model=model,
                    threshold=threshold,
                    batch_size=batch_size,
                    runs=options.get("runs"),
                    turn_ids=[turn.turn_id],
                )
                scored, stored = result.scored, result.skipped
            else:
                pairs = _dedup_pairs(source, turn, bool(options.get("exact_only")))
                result = nuggets_dedup(
                    collection=job.collection,
                    source_judge=source,
                    target_name=job.judge.name,
                    model=model,
                    threshold=threshold,
                    batch_size=batch_size,
                    exact_only=bool(options.get("exact_only")),
                    turn_ids=[turn.turn_id],
                )
                scored, stored = (0, pairs) if result.skipped_turns else (pairs, 0)
            for name in (f.name for f in fields(tally)):
                setattr(tally, name, getattr(tally, name) + getattr(result, name))
            job.calls_made += scored
            job.cache_hits += stored
            job.units_done += 1
            job.summary = str(tally)
            if progress is not None:
                progress(job)
            judge_job_save_progress(job)
    except BaseException as exc:
        judge_job_fail(job, exc)
        raise
    return judge_job_finish(job, nothing=_nothing_judged(job, tally))


def _nothing_judged(job: JudgeJob, tally: NtnMatchResult | DedupResult) -> str:
    """Why the job had no pair to score nor any stored before, or "" when it had some."""
    options = job.options
    if isinstance(tally, NtnMatchResult):
        if tally.pairs:
            return ""
        return (
            f"no chosen turn has both gold nuggets of {options.get('gold_judge')} and response nuggets "
            f"of {options.get('response_nugget_judge')}"
        )
    if tally.turns or tally.skipped_turns:
        return ""
    return f"{options.get('source_judge')} has no nuggets in the chosen turns"
