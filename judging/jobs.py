"""Judge jobs: plan the units of a task, ask the model (cache first), store labels where humans' go.

LLM tasks (relevance, nuggets, ntr, support): the main thread owns the database: it plans units, asks the
LlmCall cache, writes answers and labels, and records progress. Worker threads only wait on HTTP. So the
number of calls in flight is bounded by the job's concurrency, and a job killed at any moment loses at most
the calls then in flight: every answer is saved as it arrives, and a resumed job finds it in the cache
instead of paying again.

NLI tasks (ntn, dedup) run judging.nli's services turn by turn; each turn is written in its own
transaction and a resumed job skips what is stored (NtN pairs already scored, turns already de-duplicated).
Their units are turns, their "calls" the pairs scored, their "cache hits" the pairs already stored.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, fields
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.models import (
    Collection,
    Judge,
    NtrJudgment,
    Nugget,
    Passage,
    Ranking,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    SupportJudgment,
    Turn,
)
from annotation.selectors import UnknownTurns, turns_named
from annotation.services import judge_get_or_create
from judging import llm_judges
from judging.clients import nli as nli_client
from judging.clients.llm import ChatResult, LlmClient, LlmError, cost_usd, get_client, price_per_million
from judging.clients.llm import default_model as llm_default_model
from judging.llm_judges import UnparsableAnswer
from judging.models import JudgeJob, LlmCall, LlmFailure, UnmatchedSpan
from judging.nli import (
    DedupResult,
    NliJobError,
    NtnMatchResult,
    nli_judge_get_or_create,
    ntn_match,
    nugget_text_normalise,
    nuggets_dedup,
)

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


# --- Selecting the work ----------------------------------------------------------------------------


def _turns(collection: Collection, turn_ids: list[str] | None) -> list[Turn]:
    """The chosen turns (all when none are named), in reading order."""
    try:
        return turns_named(collection=collection, turn_ids=turn_ids or None)
    except UnknownTurns as exc:
        raise JobError(str(exc)) from None


def _run_filter(collection: Collection, run_names: list[str] | None) -> dict[str, Any]:
    if not run_names:
        return {"run__collection": collection}
    known = set(collection.runs.filter(name__in=run_names).values_list("name", flat=True))
    unknown = [name for name in run_names if name not in known]
    if unknown:
        raise JobError(f"no run {', '.join(unknown)} in collection {collection.name}")
    return {"run__collection": collection, "run__name__in": run_names}


def _passage_texts(collection: Collection, passage_ids: Iterable[str]) -> dict[str, str]:
    wanted = list(set(passage_ids))
    texts: dict[str, str] = {}
    for start in range(0, len(wanted), 2000):
        texts.update(
            Passage.objects.filter(
                collection=collection, passage_id__in=wanted[start : start + 2000]
            ).values_list("passage_id", "text")
        )
    return texts


def _query(turn: Turn) -> str:
    return turn.resolved_utterance or turn.utterance


@dataclass
class Plan:
    units: list[Unit]
    skipped: int = 0
    skipped_reason: str = ""


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

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        raise NotImplementedError


@dataclass
class JobContext:
    job: JudgeJob
    judge: Judge

    def fail(self, unit: Unit, reason: str, answer: str = "") -> None:
        LlmFailure.objects.create(job=self.job, unit=unit.name[:500], reason=reason, answer=answer)


class RelevanceTask(Task):
    name = JudgeJob.Task.RELEVANCE
    prompt_version = llm_judges.RELEVANCE
    max_tokens = 16
    expected_output_tokens = 4

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Every passage the chosen runs rank within `depth` for the chosen turns, once per turn."""
        turns = _turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        depth = int(options.get("depth") or 30)
        pairs: dict[tuple[int, str], None] = {}
        rankings = Ranking.objects.filter(
            turn_id__in=list(by_id), **_run_filter(collection, options.get("runs"))
        )
        for turn_id, passage_ids in rankings.order_by("turn_id", "run__name").values_list(
            "turn_id", "passage_ids"
        ):
            for passage_id in passage_ids[:depth]:
                pairs.setdefault((turn_id, passage_id), None)
        texts = _passage_texts(collection, (pid for _, pid in pairs))
        history = _conversations(turns)
        ptkb = {t.topic_id: [s.text for s in t.topic.ptkb.all()] for t in turns}
        units = []
        for turn_id, passage_id in pairs:
            if passage_id not in texts:
                continue
            turn = by_id[turn_id]
            units.append(
                Unit(
                    name=f"{turn.turn_id} {passage_id}",
                    data={
                        "turn": turn,
                        "passage_id": passage_id,
                        "prompt": llm_judges.relevance_render(
                            utterance=turn.utterance,
                            resolved_utterance=turn.resolved_utterance,
                            context=history[turn.id],
                            ptkb=ptkb[turn.topic_id],
                            passage=texts[passage_id],
                        ),
                    },
                )
            )
        return Plan(units, skipped=len(pairs) - len(units), skipped_reason="passages without text")

    def first_request(self, unit: Unit) -> CallRequest:
        return CallRequest(self.prompt_version, unit.data["prompt"], self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        answer = yield self.first_request(unit)
        grade = llm_judges.relevance_parse(answer)
        RelevanceJudgment.objects.update_or_create(
            judge=ctx.judge,
            turn=unit.data["turn"],
            passage_id=unit.data["passage_id"],
            defaults={"grade": grade},
        )


def _conversations(turns: list[Turn]) -> dict[int, list[tuple[str, str]]]:
    """For each turn, the earlier (utterance, response) pairs of its conversation."""
    topic_ids = {t.topic_id for t in turns}
    everything = Turn.objects.filter(topic_id__in=topic_ids).order_by("topic_id", "position")
    by_topic: dict[int, list[Turn]] = {}
    for turn in everything:
        by_topic.setdefault(turn.topic_id, []).append(turn)
    return {
        t.id: [(e.utterance, e.response) for e in by_topic[t.topic_id] if e.position < t.position]
        for t in turns
    }


class NuggetTask(Task):
    name = JudgeJob.Task.NUGGETS
    prompt_version = llm_judges.NUGGETS
    max_tokens = 1024
    expected_output_tokens = 120

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Relevant passages of the chosen turns (grade >= min_grade), or the chosen runs' responses."""
        turns = _turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        if options.get("source") == "responses":
            responses = Response.objects.filter(
                turn_id__in=list(by_id), **_run_filter(collection, options.get("runs"))
            )
            return Plan(
                [
                    Unit(
                        name=f"{by_id[r.turn_id].turn_id} {r.run.name}#{r.rank}",
                        data={"turn": by_id[r.turn_id], "response": r, "text": r.text},
                    )
                    for r in responses.select_related("run").order_by("turn_id", "run__name", "rank")
                ]
            )
        judged = RelevanceJudgment.objects.filter(
            turn_id__in=list(by_id), grade__gte=int(options.get("min_grade", 2))
        )
        if options.get("relevance_judge"):
            judged = judged.filter(judge__name=options["relevance_judge"])
        pairs = dict.fromkeys(judged.order_by("turn_id", "passage_id").values_list("turn_id", "passage_id"))
        texts = _passage_texts(collection, (pid for _, pid in pairs))
        units = [
            Unit(
                name=f"{by_id[turn_id].turn_id} {passage_id}",
                data={"turn": by_id[turn_id], "passage_id": passage_id, "text": texts[passage_id]},
            )
            for turn_id, passage_id in pairs
            if passage_id in texts
        ]
        return Plan(units, skipped=len(pairs) - len(units), skipped_reason="passages without text")

    def first_request(self, unit: Unit) -> CallRequest:
        prompt = llm_judges.nuggets_render(query=_query(unit.data["turn"]), text=unit.data["text"])
        return CallRequest(self.prompt_version, prompt, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        text, turn = unit.data["text"], unit.data["turn"]
        answer = yield self.first_request(unit)
        found, missing = llm_judges.spans_match(text, llm_judges.nugget_lines_parse(answer))
        if missing:
            # One more chance: ask for the exact wording of what was not found; what still is not stays apart.
            followup = llm_judges.nuggets_followup_render(query=_query(turn), text=text, missing=missing)
            answer = yield CallRequest(llm_judges.NUGGETS_FOLLOWUP, followup, self.max_tokens)
            lines = llm_judges.followup_lines_parse(answer)
            if len(lines) == len(missing):
                # One line per missing nugget, in order: each is recovered or not on its own.
                pairs = list(zip(missing, lines, strict=True))
            else:
                # Lines and nuggets do not pair up: keep what is found, and keep every missing nugget apart
                # too, since which of them a recovered span stands for is unknown.
                pairs = [(m, None) for m in missing] + [("", line) for line in lines if line]
            missing = []
            for original, line in pairs:
                where = llm_judges.span_locate(text, line) if line else None
                if where is None:
                    if original:
                        missing.append(original)
                    continue
                if all((s.start, s.end) != where for s in found):
                    found.append(
                        llm_judges.Span(start=where[0], end=where[1], text=text[where[0] : where[1]])
                    )
        _nuggets_store(ctx, unit, found, missing)


def _nugget_prefix(unit: Unit) -> str:
    """Nugget keys stable across re-runs: a short hash of the source, then the span's position in it."""
    response: Response | None = unit.data.get("response")
    source = f"response {response.run.name} {response.rank}" if response else unit.data["passage_id"]
    return ("r" if response else "p") + hashlib.sha1(source.encode("utf-8")).hexdigest()[:10]


@transaction.atomic
def _nuggets_store(ctx: JobContext, unit: Unit, found: list[llm_judges.Span], missing: list[str]) -> None:
    turn = unit.data["turn"]
    response: Response | None = unit.data.get("response")
    passage_id = "" if response else unit.data["passage_id"]
    prefix = _nugget_prefix(unit)
    keys = []
    for span in sorted(found, key=lambda s: (s.start, s.end)):
        key = f"{prefix}:{span.start}"
        keys.append(key)
        Nugget.objects.update_or_create(
            judge=ctx.judge,
            turn=turn,
            key=key,
            defaults={
                "text": span.text,
                "passage_id": passage_id,
                "response": response,
                "start": span.start,
                "end": span.end,
            },
        )
    Nugget.objects.filter(judge=ctx.judge, turn=turn, key__startswith=f"{prefix}:").exclude(
        key__in=keys
    ).delete()
    source = f"{response.run.name}#{response.rank}" if response else passage_id
    UnmatchedSpan.objects.filter(judge=ctx.judge, turn=turn, passage_id=source).delete()
    UnmatchedSpan.objects.bulk_create(
        [UnmatchedSpan(job=ctx.job, judge=ctx.judge, turn=turn, passage_id=source, text=m) for m in missing]
    )


class NtrTask(Task):
    name = JudgeJob.Task.NTR
    prompt_version = llm_judges.NTR
    max_tokens = 8
    expected_output_tokens = 2

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Each chosen response against each gold nugget of its turn from the gold judge."""
        gold_name = options.get("gold_judge")
        if not gold_name:
            raise JobError("the ntr task needs the judge whose gold nuggets to match (--gold-judge)")
        if not Judge.objects.filter(name=gold_name).exists():
            raise JobError(f"no judge named {gold_name!r}")
        turns = _turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        nuggets: dict[int, list[Nugget]] = {}
        for nugget in Nugget.objects.filter(judge__name=gold_name, turn_id__in=list(by_id)).order_by(
            "turn_id", "id"
        ):
            nuggets.setdefault(nugget.turn_id, []).append(nugget)
        responses = Response.objects.filter(
            turn_id__in=list(nuggets), **_run_filter(collection, options.get("runs"))
        )
        units = []
        for response in responses.select_related("run").order_by("turn_id", "run__name", "rank"):
            turn = by_id[response.turn_id]
            for nugget in nuggets[response.turn_id]:
                units.append(
                    Unit(
                        name=f"{turn.turn_id} {response.run.name}#{response.rank} nugget {nugget.key}",
                        data={"turn": turn, "response": response, "nugget": nugget},
                    )
                )
        return Plan(units)

    def first_request(self, unit: Unit) -> CallRequest:
        prompt = llm_judges.ntr_render(
            query=_query(unit.data["turn"]),
            nugget=unit.data["nugget"].text,
            response=unit.data["response"].text,
        )
        return CallRequest(self.prompt_version, prompt, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        answer = yield self.first_request(unit)
        matched = llm_judges.yes_no_parse(answer)
        NtrJudgment.objects.update_or_create(
            judge=ctx.judge,
            response=unit.data["response"],
            nugget=unit.data["nugget"],
            defaults={"matched": matched},
        )


class SupportTask(Task):
    name = JudgeJob.Task.SUPPORT
    prompt_version = llm_judges.SUPPORT
    max_tokens = 16
    expected_output_tokens = 4

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Each answer sentence of the chosen runs against its first cited passage (TREC RAG 2024)."""
        turns = _turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        run_filter = {f"response__{k}": v for k, v in _run_filter(collection, options.get("runs")).items()}
        sentences = list(
            ResponseSentence.objects.filter(response__turn_id__in=list(by_id), **run_filter)
            .select_related("response__run")
            .order_by("response__turn_id", "response__run__name", "response__rank", "index")
        )
        cited = [s for s in sentences if s.citations]
        texts = _passage_texts(collection, (s.citations[0] for s in cited))
        units = [
            Unit(
                name=f"{s.response.run.name} {by_id[s.response.turn_id].turn_id} s{s.index} {s.citations[0]}",
                data={"sentence": s, "passage_id": s.citations[0], "text": texts[s.citations[0]]},
            )
            for s in cited
            if s.citations[0] in texts
        ]
        return Plan(units, skipped=len(cited) - len(units), skipped_reason="cited passages without text")

    def first_request(self, unit: Unit) -> CallRequest:
        prompt = llm_judges.support_render(sentence=unit.data["sentence"].text, passage=unit.data["text"])
        return CallRequest(self.prompt_version, prompt, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        answer = yield self.first_request(unit)
        label = llm_judges.support_parse(answer)
        SupportJudgment.objects.update_or_create(
            judge=ctx.judge,
            sentence=unit.data["sentence"],
            citation_index=0,
            defaults={
                "passage_id": unit.data["passage_id"],
                "label": label,
                "condition": SupportJudgment.Condition.MACHINE,
            },
        )


TASKS: dict[str, Task] = {t.name: t for t in (RelevanceTask(), NuggetTask(), NtrTask(), SupportTask())}


def task_for(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise JobError(f"unknown task {name!r}; one of {', '.join(TASKS)}") from None


# --- Starting, estimating and running jobs ---------------------------------------------------------


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
            f"{self.units} units: {self.calls} calls to make, {self.cached} answered from the cache; "
            f"about {self.input_tokens} input and {self.output_tokens} output tokens; estimated cost {price}"
        )
        return text + (f"; {self.skipped} units skipped" if self.skipped else "")


def job_estimate(*, collection: Collection, task: str, model: str, options: dict[str, Any]) -> Estimate:
    """What a job would cost: one call per unit not in the cache (nugget follow-ups come on top)."""
    task_obj = task_for(task)
    plan = task_obj.plan(collection, options)
    requests = [task_obj.first_request(u) for u in plan.units]
    keys = [call_key(model, r) for r in requests]
    cached = _cached_keys(keys)
    todo = [r for r, k in zip(requests, keys, strict=True) if k not in cached]
    input_tokens = sum(len(r.prompt) // CHARS_PER_TOKEN + 8 for r in todo)
    output_tokens = task_obj.expected_output_tokens * len(todo)
    return Estimate(
        units=len(plan.units),
        calls=len(todo),
        cached=len(requests) - len(todo),
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
    judge = judge_get_or_create(name=name, kind=Judge.Kind.LLM, model=model, prompt_version=prompt_version)
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
        if values.get("batch_size"):
            options["batch_size"] = int(values["batch_size"])
    return options


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


def _judge_named(name: str | None, what: str) -> Judge:
    if not name:
        raise JobError(f"the job needs {what}")
    try:
        return Judge.objects.get(name=name)
    except Judge.DoesNotExist:
        raise JobError(f"no judge named {name!r}") from None


def _nli_job_judge(
    *, collection: Collection, task: str, judge_name: str, model: str, options: Mapping[str, Any]
) -> Judge:
    """Check an NLI job's inputs now, not in a worker, and give the judge its labels go to."""
    _turns(collection, options.get("turns"))
    threshold = options.get("threshold")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise JobError("the threshold must be between 0 and 1")
    if options.get("batch_size") is not None and options["batch_size"] < 1:
        raise JobError("the batch size must be at least 1")
    if task == JudgeJob.Task.NTN:
        _judge_named(options.get("gold_judge"), "the judge of the gold nuggets (--gold-judge)")
        _judge_named(
            options.get("response_nugget_judge"),
            "the judge of the response nuggets (--response-nugget-judge)",
        )
        _run_filter(collection, options.get("runs"))
        description = f"NtN matching by NLI: entails when P(entailment) >= {threshold}"
    else:
        if options.get("runs"):
            raise JobError("dedup works on a judge's whole nugget set per turn: runs do not apply")
        source = _judge_named(options.get("source_judge"), "the judge whose nuggets to de-duplicate")
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
    """Run (or resume) a job to its end; every answer and label is saved as it arrives.

    Units are walked from the start on every run: those answered before come back from the cache at
    no cost, so a resumed job repeats no paid call and ends with the same labels as an unbroken one.
    NLI jobs go to `_nli_job_run`, which skips what is stored in the same way.
    """
    if job.task in NLI_TASKS:
        return _nli_job_run(job=job, progress=progress)
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

    def finish_unit() -> None:
        nonlocal last_saved
        job.units_done += 1
        if progress is not None:
            progress(job)
        if time.monotonic() - last_saved >= PROGRESS_EVERY_S:
            _save_counters(job)
            last_saved = time.monotonic()

    def advance(unit: Unit, steps: Steps, answer: str | None) -> None:
        """Feed answers to a unit until it needs a call the cache does not hold, or is done."""
        try:
            request = next(steps) if answer is None else steps.send(answer)
            while True:
                key = call_key(job.model, request)
                cached = LlmCall.objects.filter(key=key).values_list("answer", flat=True).first()
                if cached is None:
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
                done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in done:
                    running = in_flight.pop(future)
                    try:
                        result, latency = future.result()
                    except LlmError as exc:
                        ctx.fail(running.unit, f"LLM call failed after {exc.attempts} attempts: {exc}")
                        job.units_failed += 1
                        finish_unit()
                        continue
                    _call_save(job, running, result, latency)
                    advance(running.unit, running.steps, result.text)
        except BaseException as exc:
            # Killed or broken: cancel what has not started, keep what was paid for, stay resumable.
            pool.shutdown(wait=False, cancel_futures=True)
            _job_failed(job, exc)
            raise
    return _job_done(job)


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


def _job_failed(job: JudgeJob, exc: BaseException) -> None:
    """Killed or broken: the job keeps what it did and says why; run again, it resumes."""
    job.status = JudgeJob.Status.FAILED
    job.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    _save_counters(job)


def _job_done(job: JudgeJob) -> JudgeJob:
    job.status = JudgeJob.Status.DONE
    job.finished_at = timezone.now()
    _save_counters(job)
    return job


def _save_counters(job: JudgeJob) -> None:
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


# --- NLI jobs --------------------------------------------------------------------------------------


def _dedup_pairs(source: Judge, turn: Turn, exact_only: bool) -> int:
    """How many pairs de-duplicating this turn scores: every ordered pair of its distinct texts
    (judging.nli.nugget_duplicates_find), none when only exact duplicates are sought."""
    if exact_only:
        return 0
    texts = Nugget.objects.filter(judge=source, turn=turn).values_list("text", flat=True)
    distinct = len({nugget_text_normalise(text) for text in texts})
    return distinct * (distinct - 1)


def _nli_job_run(*, job: JudgeJob, progress: Callable[[JudgeJob], None] | None = None) -> JudgeJob:
    """Run (or resume) an NtN or de-duplication job one turn at a time, saving progress after each turn.

    The services skip what is stored (pairs already scored, turns already de-duplicated), so a killed job
    run again scores only what it had not reached.
    """
    options = job.options
    turns = _turns(job.collection, options.get("turns"))
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
            gold = _judge_named(options.get("gold_judge"), "the judge of the gold nuggets")
            premises = _judge_named(options.get("response_nugget_judge"), "the judge of the response nuggets")
        else:
            tally = DedupResult()
            source = _judge_named(options.get("source_judge"), "the judge whose nuggets to de-duplicate")
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
            _save_counters(job)
    except BaseException as exc:
        _job_failed(job, exc)
        raise
    return _job_done(job)
