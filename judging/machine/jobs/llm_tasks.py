"""What each kind of LLM judge does: which units it plans, which calls a unit needs, which label it writes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, OuterRef
from django.db.models.fields.json import KT

from annotation.models import (
    Collection,
    Judge,
    Nugget,
    Passage,
    Ranking,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    Turn,
)
from annotation.nuggets.writer import ntr_judgment_submit, nugget_upsert
from annotation.relevance.writer import RelevanceRow, relevance_judgments_submit
from annotation.support.writer import MachineSupportLabel, support_machine_labels_submit
from judging.machine import llm_judges
from judging.machine.jobs.base import (
    CallRequest,
    JobContext,
    JobError,
    Plan,
    Steps,
    Task,
    Unit,
    Units,
    chosen_runs_filter,
    chosen_turns,
    no_judge_named,
    passage_texts,
    passages_with_text,
    turn_query,
)
from judging.machine.jobs.rag_nuggets import RAG_TASKS
from judging.models import JudgeJob, UnmatchedSpan


class RelevanceTask(Task):
    name = JudgeJob.Task.RELEVANCE
    prompt_version = llm_judges.RELEVANCE
    max_tokens = 16
    expected_output_tokens = 4

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Every passage the chosen runs rank within `depth` for the chosen turns, once per turn.

        The units are walked a turn at a time (counted by a first walk), and `load` reads the passages'
        texts a batch at a time, so a pool of 200,000 pairs is never in memory, with or without texts."""
        turns = sorted(chosen_turns(collection, options.get("turns")), key=lambda t: t.pk)
        depth = int(options.get("depth") or 30)
        rankings = Ranking.objects.filter(**chosen_runs_filter(collection, options.get("runs")))
        history = _conversations(turns)
        ptkb = {t.topic_id: [s.text for s in t.topic.ptkb.all()] for t in turns}

        def turn_pairs() -> Iterator[tuple[Turn, list[str], set[str]]]:
            """Each turn, the passages ranked within depth (first seen first, by run name), those with text."""
            for turn in turns:
                ranked: dict[str, None] = {}
                for passage_ids in (
                    rankings.filter(turn=turn).order_by("run__name").values_list("passage_ids", flat=True)
                ):
                    ranked.update(dict.fromkeys(passage_ids[:depth]))
                yield turn, list(ranked), passages_with_text(collection, ranked)

        def walk() -> Iterator[Unit]:
            for turn, ranked, with_text in turn_pairs():
                context, turn_ptkb = history[turn.id], ptkb[turn.topic_id]
                for passage_id in ranked:
                    if passage_id in with_text:
                        yield Unit(
                            name=f"{turn.turn_id} {passage_id}",
                            data={
                                "turn": turn,
                                "passage_id": passage_id,
                                "context": context,
                                "ptkb": turn_ptkb,
                            },
                        )

        pairs = units = 0
        for _turn, ranked, with_text in turn_pairs():
            pairs += len(ranked)
            units += len(with_text)
        return Plan(
            Units(units, walk),
            skipped=pairs - units,
            skipped_reason="passages without text",
            empty_reason=f"the chosen runs rank no passage within depth {depth} for the chosen turns",
        )

    def load(self, collection: Collection, units: list[Unit]) -> list[Unit]:
        texts = passage_texts(collection, (unit.data["passage_id"] for unit in units))
        for unit in units:
            turn = unit.data["turn"]
            unit.data["prompt"] = llm_judges.relevance_render(
                utterance=turn.utterance,
                resolved_utterance=turn.resolved_utterance,
                context=unit.data["context"],
                ptkb=unit.data["ptkb"],
                passage=texts.get(unit.data["passage_id"], ""),
            )
        return units

    def first_request(self, unit: Unit) -> CallRequest:
        return CallRequest(self.prompt_version, unit.data["prompt"], self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        answer = yield self.first_request(unit)
        grade = llm_judges.relevance_parse(answer)
        ctx.pending.append(
            RelevanceRow(turn_id=unit.data["turn"].pk, passage_id=unit.data["passage_id"], grade=grade)
        )

    def flush(self, ctx: JobContext) -> None:
        if ctx.pending:
            relevance_judgments_submit(judge=ctx.judge, rows=ctx.pending)
            ctx.pending.clear()


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
        turns = chosen_turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        if options.get("source") == "responses":
            responses = Response.objects.filter(
                turn_id__in=list(by_id), **chosen_runs_filter(collection, options.get("runs"))
            )
            return Plan(
                [
                    Unit(
                        name=f"{by_id[r.turn_id].turn_id} {r.run.name}#{r.rank}",
                        data={"turn": by_id[r.turn_id], "response": r, "text": r.text},
                    )
                    for r in responses.select_related("run").order_by("turn_id", "run__name", "rank")
                ],
                empty_reason="the chosen runs have no responses for the chosen turns",
            )
        min_grade = int(options.get("min_grade", 2))
        judged = RelevanceJudgment.objects.filter(turn_id__in=list(by_id), grade__gte=min_grade)
        if options.get("relevance_judge"):
            judged = judged.filter(judge__name=options["relevance_judge"])
        pairs = dict.fromkeys(judged.order_by("turn_id", "passage_id").values_list("turn_id", "passage_id"))
        texts = passage_texts(collection, (pid for _, pid in pairs))
        units = [
            Unit(
                name=f"{by_id[turn_id].turn_id} {passage_id}",
                data={"turn": by_id[turn_id], "passage_id": passage_id, "text": texts[passage_id]},
            )
            for turn_id, passage_id in pairs
            if passage_id in texts
        ]
        graded_by = f" by {options['relevance_judge']}" if options.get("relevance_judge") else ""
        return Plan(
            units,
            skipped=len(pairs) - len(units),
            skipped_reason="passages without text",
            empty_reason=f"no passage of the chosen turns is graded {min_grade} or more{graded_by}",
        )

    def first_request(self, unit: Unit) -> CallRequest:
        prompt = llm_judges.nuggets_render(query=turn_query(unit.data["turn"]), text=unit.data["text"])
        return CallRequest(self.prompt_version, prompt, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        text, turn = unit.data["text"], unit.data["turn"]
        answer = yield self.first_request(unit)
        found, missing = llm_judges.spans_match(text, llm_judges.nugget_lines_parse(answer))
        if missing:
            # One more chance: ask for the exact wording of what was not found; what still is not stays apart.
            followup = llm_judges.nuggets_followup_render(query=turn_query(turn), text=text, missing=missing)
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
        nugget_upsert(
            judge=ctx.judge,
            turn=turn,
            key=key,
            text=span.text,
            passage_id=passage_id,
            response=response,
            start=span.start,
            end=span.end,
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
            raise no_judge_named(gold_name)
        turns = chosen_turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        nuggets: dict[int, list[Nugget]] = {}
        for nugget in Nugget.objects.filter(judge__name=gold_name, turn_id__in=list(by_id)).order_by(
            "turn_id", "id"
        ):
            nuggets.setdefault(nugget.turn_id, []).append(nugget)
        responses = Response.objects.filter(
            turn_id__in=list(nuggets), **chosen_runs_filter(collection, options.get("runs"))
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
        return Plan(
            units,
            empty_reason=f"no response of the chosen runs answers a turn with gold nuggets of {gold_name}",
        )

    def first_request(self, unit: Unit) -> CallRequest:
        prompt = llm_judges.ntr_render(
            query=turn_query(unit.data["turn"]),
            nugget=unit.data["nugget"].text,
            response=unit.data["response"].text,
        )
        return CallRequest(self.prompt_version, prompt, self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        answer = yield self.first_request(unit)
        matched = llm_judges.yes_no_parse(answer)
        ntr_judgment_submit(
            judge=ctx.judge, response=unit.data["response"], nugget=unit.data["nugget"], matched=matched
        )


class SupportTask(Task):
    name = JudgeJob.Task.SUPPORT
    prompt_version = llm_judges.SUPPORT
    max_tokens = 16
    expected_output_tokens = 4

    def plan(self, collection: Collection, options: dict[str, Any]) -> Plan:
        """Each answer sentence of the chosen runs against its first cited passage (TREC RAG 2024), by turn
        (its key), run name, rank and sentence index.

        The units are counted per turn in one grouped query and walked a block of whole turns at a time
        (WALK_BLOCK units or so, one query each), and `load` reads the passages' texts a batch at a time, so
        a run set of a million sentences is never in memory, with or without texts."""
        turns = chosen_turns(collection, options.get("turns"))
        by_id = {t.id: t for t in turns}
        run_filter = {
            f"response__{k}": v for k, v in chosen_runs_filter(collection, options.get("runs")).items()
        }
        # Sentences of the chosen runs citing a passage, and those whose first cited passage has a text.
        citing = (
            ResponseSentence.objects.filter(**run_filter)
            .annotate(first=KT("citations__0"))
            .filter(first__isnull=False)
        )
        with_text = citing.filter(
            Exists(Passage.objects.filter(collection=collection, passage_id=OuterRef("first")))
        )
        chosen = {"response__turn_id__in": list(by_id)}
        per_turn = dict(
            with_text.filter(**chosen)
            .order_by()
            .values("response__turn_id")
            .annotate(n=Count("id"))
            .values_list("response__turn_id", "n")
        )
        units = sum(per_turn.values())

        def walk() -> Iterator[Unit]:
            for block in _turn_blocks(per_turn):
                for sentence_id, index, text, passage_id, run_name, turn_id in (
                    with_text.filter(response__turn_id__in=block)
                    .order_by("response__turn_id", "response__run__name", "response__rank", "index")
                    .values_list("id", "index", "text", "first", "response__run__name", "response__turn_id")
                ):
                    yield Unit(
                        name=f"{run_name} {by_id[turn_id].turn_id} s{index} {passage_id}",
                        data={"sentence_id": sentence_id, "sentence": text, "passage_id": passage_id},
                    )

        return Plan(
            Units(units, walk),
            skipped=citing.filter(**chosen).count() - units,
            skipped_reason="cited passages without text",
            empty_reason="no answer sentence of the chosen runs cites a passage",
        )

    def load(self, collection: Collection, units: list[Unit]) -> list[Unit]:
        texts = passage_texts(collection, (unit.data["passage_id"] for unit in units))
        for unit in units:
            unit.data["prompt"] = llm_judges.support_render(
                sentence=unit.data["sentence"], passage=texts.get(unit.data["passage_id"], "")
            )
        return units

    def first_request(self, unit: Unit) -> CallRequest:
        return CallRequest(self.prompt_version, unit.data["prompt"], self.max_tokens)

    def steps(self, ctx: JobContext, unit: Unit) -> Steps:
        answer = yield self.first_request(unit)
        label = llm_judges.support_parse(answer)
        ctx.pending.append(
            MachineSupportLabel(
                sentence_id=unit.data["sentence_id"], passage_id=unit.data["passage_id"], label=label
            )
        )

    def flush(self, ctx: JobContext) -> None:
        if ctx.pending:
            support_machine_labels_submit(judge=ctx.judge, labels=ctx.pending)
            ctx.pending.clear()


# Units a support job reads per query as it walks them: whole turns, so a block may hold more.
WALK_BLOCK = 5000


def _turn_blocks(units_per_turn: dict[int, int]) -> Iterator[list[int]]:
    """The turns in key order, in blocks of whole turns of about WALK_BLOCK units each."""
    block: list[int] = []
    size = 0
    for turn_id in sorted(units_per_turn):
        block.append(turn_id)
        size += units_per_turn[turn_id]
        if size >= WALK_BLOCK:
            yield block
            block, size = [], 0
    if block:
        yield block


TASKS: dict[str, Task] = {
    t.name: t for t in (RelevanceTask(), NuggetTask(), NtrTask(), SupportTask(), *RAG_TASKS)
}


def task_for(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise JobError(f"unknown task {name!r}; one of {', '.join(TASKS)}") from None
