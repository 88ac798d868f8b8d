"""Judge jobs: plan the units of a task, ask the model (cache first), store labels where humans' go.

LLM tasks (relevance, nuggets, ntr, support): the main thread owns the database: it plans units, asks the
LlmCall cache, writes answers and labels, and records progress. Worker threads only wait on HTTP. So the
number of calls in flight is bounded by the job's concurrency. Units are made ready a batch at a time
(their texts read and their first calls looked up in the cache in one query each), and answers are saved
with the labels they give in one transaction at least every tenth of a second, so a job killed at any
moment loses at most the calls then in flight and the answers of its last tenth of a second; a resumed
job finds every saved answer in the cache instead of paying again, and writes no label twice.

NLI tasks (ntn, dedup) run judging.machine.nli's services turn by turn; each turn is written in its own
transaction and a resumed job skips what is stored (NtN pairs already scored, turns already de-duplicated).
Their units are turns, their "calls" the pairs scored, their "cache hits" the pairs already stored.

The package: `base` (units, calls, cache key, selecting the work, bookkeeping), `llm_tasks` (what each
LLM task plans and writes), `start` (options, estimates, starting or resuming a job), `runner` (the LLM
run loop) and `nli_runner`.
"""

from judging.machine.jobs.base import CallRequest, JobError, Unit, call_key
from judging.machine.jobs.llm_tasks import TASKS, task_for
from judging.machine.jobs.runner import judge_job_run
from judging.machine.jobs.start import (
    NLI_TASKS,
    Estimate,
    job_estimate,
    job_model,
    job_options,
    judge_job_start,
    llm_judge_get_or_create,
)

__all__ = [
    "NLI_TASKS",
    "TASKS",
    "CallRequest",
    "Estimate",
    "JobError",
    "Unit",
    "call_key",
    "job_estimate",
    "job_model",
    "job_options",
    "judge_job_run",
    "judge_job_start",
    "llm_judge_get_or_create",
    "task_for",
]
