"""The parts every judge job shares: its errors, units, calls and cache key, the work it selects,
and the bookkeeping that saves its progress."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from typing import Any

from django.db import connection
from django.db.models import Count
from django.utils import timezone

from annotation.models import (
    Collection,
    Judge,
    Passage,
    Turn,
)
from annotation.selectors import UnknownTurns, turns_named
from core.names import known_names
from core.wording import plural
from judging.machine.jobs.state import CallTotals, call_totals, totals_apply
from judging.models import JudgeJob, LlmCall, LlmFailure

# A rough 4 characters per token for dry-run estimates (no tokenizer for every model is at hand).
CHARS_PER_TOKEN = 4
PROGRESS_EVERY_S = 1.0


class JobError(Exception):
    """A job cannot be planned or started as asked (unknown judge, turn or run, a judge of another kind)."""


@dataclass(frozen=True)
class CallRequest:
    """One chat call a unit needs: its prompt template version, rendered prompt and parameters."""

    prompt_version: str
    prompt: str
    max_tokens: int
    temperature: float = 0.0

    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}


def call_key(model: str, request: CallRequest) -> str:
    """The cache key: the same model, prompt version, prompt and parameters give the same answer to reuse."""
    payload = json.dumps(
        [model, request.prompt_version, request.prompt, request.params()], sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# A unit's steps: a generator that yields the calls it needs, receives each answer, writes its label.
Steps = Generator[CallRequest, str, None]


@dataclass
class Unit:
    name: str
    data: dict[str, Any] = field(default_factory=dict)


class Units:
    """A plan's units made as they are walked, `count` of them: a job of 200,000 units holds the units of
    one turn at a time, not 200,000 units with their keys, texts and prompts. Each walk reads them again."""

    def __init__(self, count: int, walk: Callable[[], Iterator[Unit]]) -> None:
        self.count = count
        self.walk = walk

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Unit]:
        return self.walk()


# Units are made ready (`Task.load`: their texts read, their prompts rendered) and their first calls looked
# up in the cache this many at a time: one query each per batch, and only a batch's texts in memory.
LOAD_BATCH = 500


def batches(units: Iterable[Unit], size: int = LOAD_BATCH) -> Iterator[list[Unit]]:
    """The units in lists of `size`, in order."""
    it = iter(units)
    while batch := list(islice(it, size)):
        yield batch


# --- Selecting the work ----------------------------------------------------------------------------


def chosen_turns(collection: Collection, turn_ids: list[str] | None) -> list[Turn]:
    """The chosen turns (all when none are named), in reading order."""
    try:
        return turns_named(collection=collection, turn_ids=turn_ids or None)
    except UnknownTurns as exc:
        raise JobError(str(exc)) from None


def chosen_runs_filter(collection: Collection, run_names: list[str] | None) -> dict[str, object]:
    """Filter arguments for rows of the chosen runs (all when none are named); unknown names are a JobError."""
    if not run_names:
        return {"run__collection": collection}
    known = set(collection.runs.filter(name__in=run_names).values_list("name", flat=True))
    unknown = [name for name in run_names if name not in known]
    if unknown:
        raise JobError(
            f"no run{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} in collection "
            f"{collection.name}; {known_names(collection.runs.all(), kind='run')}"
        )
    return {"run__collection": collection, "run__name__in": run_names}


def no_judge_named(name: str) -> JobError:
    """The error for a judge name that names no judge, with the names that do."""
    return JobError(f"no judge named {name!r}; {known_names(Judge.objects.all(), kind='judge')}")


def passage_texts(collection: Collection, passage_ids: Iterable[str]) -> dict[str, str]:
    """{passage id: text} of the collection's passages among `passage_ids`, read in chunks."""
    wanted = list(set(passage_ids))
    texts: dict[str, str] = {}
    for start in range(0, len(wanted), 2000):
        texts.update(
            Passage.objects.filter(
                collection=collection, passage_id__in=wanted[start : start + 2000]
            ).values_list("passage_id", "text")
        )
    return texts


def passages_with_text(collection: Collection, passage_ids: Iterable[str]) -> set[str]:
    """Which of `passage_ids` the collection holds (their ids only, not their texts), read in chunks."""
    wanted = list(set(passage_ids))
    found: set[str] = set()
    for start in range(0, len(wanted), 5000):
        found.update(
            Passage.objects.filter(
                collection=collection, passage_id__in=wanted[start : start + 5000]
            ).values_list("passage_id", flat=True)
        )
    return found


def turn_query(turn: Turn) -> str:
    """What a judge is told the user asked: the resolved utterance where the turn has one."""
    return turn.resolved_utterance or turn.utterance


@dataclass
class Plan:
    """A job's units, those it had to skip and why, and why it has none when it has none."""

    units: Sequence[Unit] | Units
    skipped: int = 0
    skipped_reason: str = ""
    empty_reason: str = "no units to judge in the chosen turns and runs"

    def nothing_to_judge(self) -> str:
        """Why a plan without units judges nothing: its units were all skipped, or it found none."""
        if self.skipped:
            every = "all " if self.skipped > 1 else ""
            return f"{every}{plural(self.skipped, 'unit')} skipped ({self.skipped_reason})"
        return self.empty_reason


class Task:
    """What one kind of LLM judge does: which units, which calls per unit, which label it writes."""

    name: str
    prompt_version: str
    max_tokens: int
    # Expected answer length, for dry-run cost estimates.
    expected_output_tokens: int

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        raise NotImplementedError

    def first_request(self, unit: Unit) -> CallRequest:
        raise NotImplementedError

    def calls_after_first(self, unit: Unit) -> int:
        """Calls a unit makes after its first whatever the answers say (estimates count them too)."""
        return 0

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        raise NotImplementedError

    def load(self, collection: Collection, units: list[Unit]) -> list[Unit]:
        """The units made ready to run, a batch at a time (`LOAD_BATCH`): tasks whose plan keeps only keys
        read the batch's texts here, in one query, so a job's memory does not grow with its units."""
        return units

    def flush(self, ctx: JobContext) -> None:
        """Write the labels the task's units left in `ctx.pending`; the runner calls it when it saves its
        progress and at the end. Tasks that write each unit's labels at once leave it empty."""


@dataclass
class JobContext:
    job: JudgeJob
    judge: Judge
    # Labels of finished units not yet written (tasks whose labels are cheaper to write many at a time).
    pending: list[Any] = field(default_factory=list)

    def fail(self, unit: Unit, reason: str, answer: str = "") -> None:
        LlmFailure.objects.create(job=self.job, unit=unit.name[:500], reason=reason, answer=answer)


# --- Bookkeeping: what a run saves on its job row --------------------------------------------------


def judge_job_fail(job: JudgeJob, exc: BaseException) -> None:
    """Killed or broken: the job keeps what it did and says why; run again, it resumes."""
    job.status = JudgeJob.Status.FAILED
    job.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    judge_job_save_progress(job)


# The start of the error of a job that ended without judging anything: the Jobs pages, the judge command
# and a script reading the row all see it as failed, with the reason after this.
NOTHING_JUDGED = "nothing judged"


def judge_job_finish(
    job: JudgeJob, *, nothing: str = "", skipped: int = 0, skipped_reason: str = ""
) -> JudgeJob:
    """The end of a run: done, saying first how many units failed and why, then how many were skipped and
    why; failed when none succeeded, or when there was nothing to judge (`nothing` says why).

    A job with nothing to show is never "done": it ends failed, so the judge command exits non-zero and
    starting the same work again (after importing the missing passages, say) resumes it.
    """
    job.finished_at = timezone.now()
    job.status, job.error = JudgeJob.Status.DONE, ""
    notes: list[str] = []
    if job.units_failed:
        reasons = (
            LlmFailure.objects.filter(job=job)
            .values("reason")
            .annotate(n=Count("id"))
            .order_by("-n", "reason")
        )
        common = reasons.first()
        why = f" (most often: {common['reason'][:300]})" if common else ""
        if job.units_failed >= job.units_total:
            job.status = JudgeJob.Status.FAILED
            every = "all " if job.units_total > 1 else ""
            notes.append(f"{every}{plural(job.units_total, 'unit')} failed{why}")
        else:
            notes.append(f"{job.units_failed} of {plural(job.units_total, 'unit')} failed{why}")
    if skipped and job.units_total:
        notes.append(f"{plural(skipped, 'unit')} skipped ({skipped_reason})")
    if nothing:
        job.status = JudgeJob.Status.FAILED
        notes.insert(0, f"{NOTHING_JUDGED}: {nothing}")
    job.error = "; ".join(notes)
    judge_job_save_progress(job)
    return job


def judge_job_save_progress(job: JudgeJob, *, recount: bool = True) -> None:
    """Save the job's progress; its call and cost totals are those of its call rows, so a count never
    drifts from what was paid for. Every save also moves `updated_at`: the job's sign of life.

    `recount=False`: the caller keeps the totals itself, as the rows' totals when it started plus those of
    the rows it saved since (`llm_calls_save`), and saves without counting every row again each second.
    """
    if not job.is_nli and recount:
        totals_apply(job, call_totals([job.pk]).get(job.pk))
    job.save(
        update_fields=[
            "status",
            "error",
            "units_total",
            "units_done",
            "units_failed",
            "calls_made",
            "cache_hits",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "summary",
            "started_at",
            "finished_at",
            "updated_at",
        ]
    )


# One statement of one shape whatever the number of rows (an array per column), so the driver parses it once.
_CALLS_INSERT = (
    "INSERT INTO {table} (key, model, prompt_version, prompt, params, answer, input_tokens, output_tokens, "
    "cost_usd, latency_ms, job_id, created_at) "
    "SELECT k, m, v, p, pa::jsonb, a, i, o, c, l, j, %s FROM unnest(%s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::text[], %s::text[], %s::integer[], %s::integer[], %s::numeric[], %s::integer[], "
    "%s::bigint[]) AS u(k, m, v, p, pa, a, i, o, c, l, j) "
    "ON CONFLICT (key) DO NOTHING RETURNING input_tokens, output_tokens, cost_usd"
)


def llm_calls_save(*, calls: Sequence[LlmCall]) -> CallTotals:
    """Save answered calls in one statement; a key already stored (another job paid for the same prompt
    at the same moment) keeps its first answer. Returns the totals of the rows this saved, so a job can
    keep its own totals equal to those of its rows without counting them again."""
    if not calls:
        return CallTotals()
    columns = (
        [c.key for c in calls],
        [c.model for c in calls],
        [c.prompt_version for c in calls],
        [c.prompt for c in calls],
        [json.dumps(c.params) for c in calls],
        [c.answer for c in calls],
        [c.input_tokens for c in calls],
        [c.output_tokens for c in calls],
        [c.cost_usd for c in calls],
        [c.latency_ms for c in calls],
        [c.job_id for c in calls],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            _CALLS_INSERT.format(table=connection.ops.quote_name(LlmCall._meta.db_table)),
            [timezone.now(), *columns],
        )
        saved = cursor.fetchall()
    return CallTotals(
        calls=len(saved),
        input_tokens=sum(r[0] for r in saved),
        output_tokens=sum(r[1] for r in saved),
        cost_usd=sum((r[2] for r in saved), Decimal(0)),
    )
