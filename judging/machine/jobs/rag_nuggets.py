"""The LLM jobs of TREC RAG nugget evaluation: create a turn's nugget list, label nuggets vital/okay, and
label each answer against its turn's nuggets (support / partial_support / not_support).

Creation reads a turn's relevant passages a window at a time and asks for the whole updated list after
each window, as AutoNuggetizer does; a turn is one unit whose calls follow one another, each prompt
holding the list the previous answer gave, so a resumed job replays the turn from the cache.

Importance and assignment label a window of nuggets per call. Their labels are written many windows at a
time (`flush`, with the job's progress), since one write per window cost the runner's thread more than
the rest of the window's work; a job killed before a flush loses no paid call, as a resumed job reads
those answers from the cache.

An answer the parser cannot read is asked again (a prompt of its own, so it is cached too); each
unreadable answer is recorded, and a unit whose last attempt is still unreadable fails, with no label.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from annotation.models import (
    Collection,
    Condition,
    Judge,
    Nugget,
    NuggetSupport,
    RelevanceJudgment,
    Response,
    Turn,
)
from annotation.rag_nuggets.writer import (
    AssignmentRow,
    ImportanceRow,
    NuggetDraft,
    importance_judgments_upsert,
    nugget_assignments_upsert,
    nugget_list_replace,
)
from judging.machine import rag_nuggets
from judging.machine.jobs.base import (
    CallRequest,
    JobContext,
    JobError,
    Plan,
    Steps,
    Task,
    Unit,
    chosen_runs_filter,
    chosen_turns,
    no_judge_named,
    passage_texts,
    turn_query,
)
from judging.machine.llm_judges import UnparsableAnswer
from judging.models import JudgeJob

T = TypeVar("T")

# How many times an unreadable answer is asked again before its unit fails.
RETRIES = 2
DEFAULT_WINDOW = 10
DEFAULT_MAX_NUGGETS = 30


def _asked(
    ctx: JobContext, unit: Unit, request: CallRequest, parse: Callable[[str], T]
) -> Generator[CallRequest, str, T]:
    """Ask, and ask again while the answer cannot be read; the last unreadable answer fails the unit."""
    answer = yield request
    for attempt in range(RETRIES + 1):
        try:
            return parse(answer)
        except UnparsableAnswer as exc:
            if attempt == RETRIES:
                raise
            ctx.fail(unit, f"unparsable answer, asked again: {exc}", answer)
            retry = rag_nuggets.retry_render(request.prompt, str(exc), attempt + 2)
            answer = yield CallRequest(request.prompt_version, retry, request.max_tokens)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _windows(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _window_size(options: dict[str, Any]) -> int:
    window = DEFAULT_WINDOW if options.get("window") is None else int(options["window"])
    if window < 1:
        raise JobError("the window must hold at least 1 item")
    return window


def _no_runs(task: str, options: dict[str, Any]) -> None:
    if options.get("runs"):
        raise JobError(f"{task} works on each turn's passages or nuggets, whatever the runs: name no runs")


def _nuggets_of(judge_name: str | None, turns: list[Turn], task: str) -> dict[int, list[Nugget]]:
    """{turn id: the judge's nuggets of the turn, in list order}; the judge must exist."""
    if not judge_name:
        raise JobError(f"the {task} task needs the judge whose nuggets to label (--nuggets-judge)")
    if not Judge.objects.filter(name=judge_name).exists():
        raise no_judge_named(judge_name)
    nuggets: dict[int, list[Nugget]] = {}
    for nugget in Nugget.objects.filter(judge__name=judge_name, turn__in=turns).order_by(
        "turn_id", "position", "id"
    ):
        nuggets.setdefault(nugget.turn_id, []).append(nugget)
    return nuggets


def nugget_key(text: str) -> str:
    """A created nugget's key: from its text, so a re-run keeps the rows (and labels) of unchanged nuggets."""
    folded = " ".join(text.casefold().split())
    return "c" + hashlib.sha1(folded.encode("utf-8")).hexdigest()[:12]


class NuggetsCreateTask(Task):
    name = JudgeJob.Task.NUGGETS_CREATE
    prompt_version = rag_nuggets.NUGGETS_CREATE
    max_tokens = 1500
    expected_output_tokens = 400

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Each chosen turn with passages graded >= min_grade (by the qrels judge, if named)."""
        _no_runs(self.name, options)
        window = _window_size(options)
        max_nuggets = (
            DEFAULT_MAX_NUGGETS if options.get("max_nuggets") is None else int(options["max_nuggets"])
        )
        if max_nuggets < 1:
            raise JobError("--max-nuggets must be at least 1")
        turns = chosen_turns(collection, options.get("turns"))
        min_grade = int(options.get("min_grade", 1))
        judged = RelevanceJudgment.objects.filter(turn__in=turns, grade__gte=min_grade)
        if options.get("relevance_judge"):
            if not Judge.objects.filter(name=options["relevance_judge"]).exists():
                raise no_judge_named(options["relevance_judge"])
            judged = judged.filter(judge__name=options["relevance_judge"])
        # Most relevant first, as the reading order of the windows: the list fills with what matters most.
        pairs = dict.fromkeys(
            judged.order_by("turn_id", "-grade", "passage_id").values_list("turn_id", "passage_id")
        )
        texts = passage_texts(collection, (pid for _, pid in pairs))
        passages: dict[int, list[str]] = {}
        for turn_id, passage_id in pairs:
            if passage_id in texts:
                passages.setdefault(turn_id, []).append(texts[passage_id])
        units = [
            Unit(
                name=turn.turn_id,
                data={"turn": turn, "windows": _windows(passages[turn.id], window), "max": max_nuggets},
            )
            for turn in turns
            if turn.id in passages
        ]
        graded_by = f" by {options['relevance_judge']}" if options.get("relevance_judge") else ""
        return Plan(
            units,
            skipped=len({turn_id for turn_id, _ in pairs} - set(passages)),
            skipped_reason="turns whose relevant passages have no text",
            empty_reason=f"no passage of the chosen turns is graded {min_grade} or more{graded_by}",
        )

    def _request(self, unit: Unit, nuggets: Sequence[str], window: Sequence[str]) -> CallRequest:
        text = rag_nuggets.nuggets_create_render(
            query=turn_query(unit.data["turn"]),
            nuggets=nuggets,
            passages=window,
            max_nuggets=unit.data["max"],
        )
        return CallRequest(self.prompt_version, text, self.max_tokens)

    def first_request(self, unit: Unit) -> CallRequest:
        return self._request(unit, [], unit.data["windows"][0])

    def calls_after_first(self, unit: Unit) -> int:
        return len(unit.data["windows"]) - 1

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        nuggets: list[str] = []
        for window in unit.data["windows"]:
            nuggets = yield from _asked(
                ctx,
                unit,
                self._request(unit, nuggets, window),
                lambda answer: rag_nuggets.nugget_list_parse(answer, max_nuggets=unit.data["max"]),
            )
        drafts = list(
            {nugget_key(text): NuggetDraft(key=nugget_key(text), text=text) for text in nuggets}.values()
        )
        nugget_list_replace(judge=ctx.judge, turn=unit.data["turn"], nuggets=drafts)


class ImportanceTask(Task):
    name = JudgeJob.Task.IMPORTANCE
    prompt_version = rag_nuggets.IMPORTANCE
    max_tokens = 200
    expected_output_tokens = 40

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """The nuggets judge's nuggets of each chosen turn, a window at a time."""
        _no_runs(self.name, options)
        window = _window_size(options)
        turns = chosen_turns(collection, options.get("turns"))
        nuggets = _nuggets_of(options.get("nuggets_judge"), turns, self.name)
        units = [
            Unit(
                name=f"{turn.turn_id} nuggets {start + 1}-{start + len(chunk)}",
                data={"turn": turn, "nuggets": chunk},
            )
            for turn in turns
            for start, chunk in (
                (i * window, c) for i, c in enumerate(_windows(nuggets.get(turn.id, []), window))
            )
        ]
        return Plan(units, empty_reason=f"{options.get('nuggets_judge')} has no nuggets for the chosen turns")

    def first_request(self, unit: Unit) -> CallRequest:
        text = rag_nuggets.importance_render(
            query=turn_query(unit.data["turn"]), nuggets=[n.text for n in unit.data["nuggets"]]
        )
        return CallRequest(self.prompt_version, text, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        chunk: list[Nugget] = unit.data["nuggets"]
        labels = yield from _asked(
            ctx,
            unit,
            self.first_request(unit),
            lambda answer: rag_nuggets.importance_parse(answer, count=len(chunk)),
        )
        ctx.pending.extend(
            ImportanceRow(nugget_id=n.pk, importance=label) for n, label in zip(chunk, labels, strict=True)
        )

    def flush(self, ctx: JobContext) -> None:
        if ctx.pending:
            importance_judgments_upsert(
                judge=ctx.judge,
                collection=ctx.job.collection,
                rows=ctx.pending,
                condition=Condition.MACHINE,
            )
            ctx.pending.clear()


class AssignmentTask(Task):
    name = JudgeJob.Task.ASSIGNMENT
    prompt_version = rag_nuggets.ASSIGNMENT
    max_tokens = 250
    expected_output_tokens = 50

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Each answer of the chosen runs against its turn's nuggets (the nuggets judge's), a window at a time."""
        window = _window_size(options)
        turns = chosen_turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        nuggets = _nuggets_of(options.get("nuggets_judge"), turns, self.name)
        responses = Response.objects.filter(
            turn_id__in=list(nuggets), **chosen_runs_filter(collection, options.get("runs"))
        )
        units = []
        for response in responses.select_related("run").order_by("turn_id", "run__name", "rank"):
            turn = by_id[response.turn_id]
            for i, chunk in enumerate(_windows(nuggets[response.turn_id], window)):
                start = i * window
                units.append(
                    Unit(
                        name=(
                            f"{turn.turn_id} {response.run.name}#{response.rank} "
                            f"nuggets {start + 1}-{start + len(chunk)}"
                        ),
                        data={"turn": turn, "response": response, "nuggets": chunk},
                    )
                )
        return Plan(
            units,
            empty_reason=(
                f"no answer of the chosen runs answers a turn with nuggets of {options.get('nuggets_judge')}"
            ),
        )

    def first_request(self, unit: Unit) -> CallRequest:
        text = rag_nuggets.assignment_render(
            query=turn_query(unit.data["turn"]),
            answer=unit.data["response"].text,
            nuggets=[n.text for n in unit.data["nuggets"]],
        )
        return CallRequest(self.prompt_version, text, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        chunk: list[Nugget] = unit.data["nuggets"]
        response = unit.data["response"]
        if rag_nuggets.answer_is_empty(response.text):
            ctx.pending.extend(
                AssignmentRow(response_id=response.pk, nugget_id=n.pk, label=NuggetSupport.NONE.value)
                for n in chunk
            )
            return
        labels = yield from _asked(
            ctx,
            unit,
            self.first_request(unit),
            lambda answer: rag_nuggets.assignment_parse(answer, count=len(chunk)),
        )
        ctx.pending.extend(
            AssignmentRow(response_id=response.pk, nugget_id=n.pk, label=label)
            for n, label in zip(chunk, labels, strict=True)
        )

    def flush(self, ctx: JobContext) -> None:
        if ctx.pending:
            nugget_assignments_upsert(
                judge=ctx.judge,
                collection=ctx.job.collection,
                rows=ctx.pending,
                condition=Condition.MACHINE,
            )
            ctx.pending.clear()


RAG_TASKS: tuple[Task, ...] = (NuggetsCreateTask(), ImportanceTask(), AssignmentTask())
