"""NLI judges: nugget-to-nugget (NtN) matching and nugget de-duplication.

**NtN matching** (CONE-RAG): for every turn, every response nugget (the premise) is paired with every
gold nugget of the same turn (the hypothesis); the NLI model's entailment probability is stored as an
NtnJudgment of an NLI judge (`score`), with `entails` = probability >= threshold.

**De-duplication** of one judge's nugget set, turn by turn, in two passes:

1. *Exact duplicates*: texts equal after normalisation (Unicode NFKC, case folded, every punctuation
   character read as a space, runs of whitespace collapsed) are duplicates. Punctuation becomes a space
   rather than vanishing so that "1.15 m" and "11.5 m" stay different.
2. *Entailment duplicates*: two nuggets are duplicates when each entails the other (both directions at
   or above the threshold), i.e. they are paraphrases. One direction alone is not enough: a short nugget
   entailed by a longer one still carries its own claim as a unit, and CONE-RAG recall counts units.

**Which nugget survives**: nuggets are visited in order of their key (numbers in keys compared as
numbers, so "[2]" comes before "[10]"), then row id; a nugget is a duplicate of the *earliest* surviving
nugget it matches, otherwise it survives. `duplicate_of` therefore always points at a survivor, and the
outcome does not depend on the order rows come out of the database.

Both sets are kept: the source nuggets get `duplicate_of` (None for survivors), and the survivors are
copied to a new judge (the de-duplicated set) with `original` pointing at their source nugget.

Work is written turn by turn, each turn in its own transaction, so a long job that is killed resumes
where it stopped: pairs an NLI judge already scored and turns a de-duplicated judge already holds are
skipped.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q

from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, Judge, NtnJudgment, Nugget, Turn
from annotation.nuggets.writer import NtnRow, ntn_judgments_store, nugget_duplicates_mark, nuggets_create
from annotation.services import judge_get_or_create
from core.ordering import natural_key
from core.progress import Progress
from core.wording import plural
from judging.clients import nli as nli_client


class NliJobError(ValueError):
    """The NLI job cannot run as asked (a judge name clash, the same judge as source and target...)."""


@dataclass
class NtnMatchResult:
    turns: int = 0
    pairs: int = 0
    scored: int = 0
    skipped: int = 0
    entailing: int = 0

    def __str__(self) -> str:
        return (
            f"{plural(self.turns, 'turn')}, {plural(self.pairs, 'pair')}: {self.scored} scored "
            f"({self.entailing} {'entails' if self.entailing == 1 else 'entail'}), "
            f"{self.skipped} already judged"
        )


@dataclass
class DedupResult:
    turns: int = 0
    skipped_turns: int = 0
    nuggets: int = 0
    exact_duplicates: int = 0
    entailment_duplicates: int = 0
    kept: int = 0

    def __str__(self) -> str:
        return (
            f"{plural(self.turns, 'turn')} ({self.skipped_turns} already done), {plural(self.nuggets, 'nugget')}: "
            f"{self.exact_duplicates} exact and {plural(self.entailment_duplicates, 'entailment duplicate')}, "
            f"{self.kept} kept"
        )


_WHITESPACE = re.compile(r"\s+")


def nugget_text_normalise(text: str) -> str:
    """Case, whitespace and punctuation folded away, for exact-duplicate detection."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    return _WHITESPACE.sub(" ", text).strip()


def nugget_order_key(nugget: Nugget) -> tuple[Any, ...]:
    """The survival order: key in natural order ("[2]" before "[10]", "p3f:9" before "p3f:120"), then row id."""
    return (natural_key(nugget.key.casefold()), nugget.id)


def nli_judge_get_or_create(*, name: str, model: str, description: str = "") -> Judge:
    """The NLI judge named `name`; refuses a name already used by another kind of judge or model."""
    try:
        judge = judge_get_or_create(name=name, kind=Judge.Kind.NLI, model=model, description=description)
    except ImportJudgeRefused as exc:
        raise NliJobError(str(exc)) from None
    if judge.kind != Judge.Kind.NLI or judge.model != model:
        raise NliJobError(
            f"judge {name!r} already exists as kind {judge.kind!r} with model {judge.model!r}; "
            f"choose another name for model {model!r}"
        )
    return judge


def _turns(collection: Collection, turn_ids: Iterable[str] | None) -> list[Turn]:
    turns = list(collection.turns.select_related("topic"))
    if turn_ids is not None:
        wanted = set(turn_ids)
        unknown = wanted - {t.turn_id for t in turns}
        if unknown:
            raise NliJobError(f"no such turns in {collection.name}: {', '.join(sorted(unknown))}")
        turns = [t for t in turns if t.turn_id in wanted]
    return sorted(turns, key=lambda t: natural_key(t.turn_id))


# --- NtN matching ----------------------------------------------------------------------------------


def ntn_match(
    *,
    collection: Collection,
    gold_judge: Judge,
    response_nugget_judge: Judge,
    judge_name: str,
    model: str | None = None,
    threshold: float | None = None,
    batch_size: int | None = None,
    runs: Sequence[str] | None = None,
    turn_ids: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> NtnMatchResult:
    """Score every (response nugget, gold nugget) pair of each turn with an NLI judge.

    Premise: the response nugget; hypothesis: the gold nugget. `runs` limits the response nuggets to
    those extracted from responses of the named runs (nuggets without a response are always included).
    """

    turns = _turns(collection, turn_ids)
    nli = nli_client.nli_model(model, threshold=threshold, batch_size=batch_size)
    judge = nli_judge_get_or_create(
        name=judge_name,
        model=nli.name,
        description=f"NtN matching by NLI: entails when P(entailment) >= {nli.threshold}",
    )
    result = NtnMatchResult()
    for done, turn in enumerate(turns, start=1):
        gold = list(Nugget.objects.filter(judge=gold_judge, turn=turn).order_by("id"))
        premises = Nugget.objects.filter(judge=response_nugget_judge, turn=turn)
        if runs is not None:
            premises = premises.filter(Q(response__isnull=True) | Q(response__run__name__in=list(runs)))
        premises_list = list(premises.order_by("id"))
        if gold and premises_list:
            result.turns += 1
            judged = set(
                NtnJudgment.objects.filter(
                    judge=judge, gold_nugget__in=gold, response_nugget__in=premises_list
                ).values_list("response_nugget_id", "gold_nugget_id")
            )
            todo = [(r, g) for r in premises_list for g in gold if (r.id, g.id) not in judged]
            result.pairs += len(premises_list) * len(gold)
            result.skipped += len(premises_list) * len(gold) - len(todo)
            if todo:
                probs = nli.entailment_probs([(r.text, g.text) for r, g in todo])
                rows = [
                    NtnRow(response_nugget_id=r.id, gold_nugget_id=g.id, score=p, entails=p >= nli.threshold)
                    for (r, g), p in zip(todo, probs, strict=True)
                ]
                ntn_judgments_store(judge=judge, rows=rows)
                result.scored += len(rows)
                result.entailing += sum(row.entails for row in rows)
        if progress:
            progress(done, len(turns))
    return result


# --- De-duplication --------------------------------------------------------------------------------


def nugget_duplicates_find(
    nuggets: Sequence[Nugget],
    *,
    entails: Callable[[list[tuple[str, str]]], list[bool]] | None = None,
) -> tuple[dict[int, int | None], dict[int, str]]:
    """The survivor of each nugget of one turn: ({nugget id: survivor id or None}, {id: "exact"|"nli"}).

    `entails` maps (premise, hypothesis) pairs to booleans; None runs the exact pass only.
    """
    ordered = sorted(nuggets, key=nugget_order_key)
    duplicate_of: dict[int, int | None] = {}
    how: dict[int, str] = {}
    first_by_text: dict[str, Nugget] = {}
    distinct: list[Nugget] = []
    for nugget in ordered:
        normalised = nugget_text_normalise(nugget.text)
        first = first_by_text.get(normalised)
        if first is None:
            first_by_text[normalised] = nugget
            distinct.append(nugget)
            duplicate_of[nugget.id] = None
        else:
            duplicate_of[nugget.id] = first.id
            how[nugget.id] = "exact"
    if entails is None or len(distinct) < 2:
        return duplicate_of, how

    # Score every ordered pair of distinct texts in one batched call, then decide greedily in order.
    pairs = [(a, b) for a in distinct for b in distinct if a.id != b.id]
    verdicts = entails([(a.text, b.text) for a, b in pairs])
    entailed = {(a.id, b.id) for (a, b), yes in zip(pairs, verdicts, strict=True) if yes}
    survivors: list[Nugget] = []
    for nugget in distinct:
        match = next(
            (s for s in survivors if (s.id, nugget.id) in entailed and (nugget.id, s.id) in entailed), None
        )
        if match is None:
            survivors.append(nugget)
        else:
            duplicate_of[nugget.id] = match.id
            how[nugget.id] = "nli"
    # Exact duplicates of a nugget that turned out to be an entailment duplicate follow it to its survivor.
    for nugget_id, target in list(duplicate_of.items()):
        if target is not None and duplicate_of.get(target) is not None:
            duplicate_of[nugget_id] = duplicate_of[target]
    return duplicate_of, how


def nuggets_dedup(
    *,
    collection: Collection,
    source_judge: Judge,
    target_name: str,
    model: str | None = None,
    threshold: float | None = None,
    batch_size: int | None = None,
    exact_only: bool = False,
    turn_ids: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> DedupResult:
    """De-duplicate `source_judge`'s nuggets within each turn into a new judge named `target_name`.

    The source set is kept and marked (`duplicate_of`); the survivors are copied to the target judge
    with `original` set. `exact_only` skips the NLI pass (no model needed).
    """
    if target_name == source_judge.name:
        raise NliJobError("the de-duplicated set needs its own judge: choose a target name")
    turns = _turns(collection, turn_ids)
    entails: Callable[[list[tuple[str, str]]], list[bool]] | None = None
    model_name = ""
    rule = "exact duplicates after normalising case, whitespace and punctuation"
    if not exact_only:
        nli = nli_client.nli_model(model, threshold=threshold, batch_size=batch_size)
        entails, model_name = nli.entails, nli.name
        rule += f", then mutual entailment (both directions, P >= {nli.threshold})"
    target = nli_judge_get_or_create(
        name=target_name,
        model=model_name,
        description=f"De-duplicated {source_judge.name}: {rule}; the earliest key survives.",
    )
    result = DedupResult()
    done_turns = set(Nugget.objects.filter(judge=target, turn__in=turns).values_list("turn_id", flat=True))
    for done, turn in enumerate(turns, start=1):
        nuggets = list(Nugget.objects.filter(judge=source_judge, turn=turn))
        if nuggets:
            if turn.id in done_turns:
                result.skipped_turns += 1
            else:
                duplicate_of, how = nugget_duplicates_find(nuggets, entails=entails)
                nugget_dedup_store(nuggets=nuggets, duplicate_of=duplicate_of, target=target)
                result.turns += 1
                result.nuggets += len(nuggets)
                result.exact_duplicates += sum(1 for v in how.values() if v == "exact")
                result.entailment_duplicates += sum(1 for v in how.values() if v == "nli")
                result.kept += sum(1 for v in duplicate_of.values() if v is None)
        if progress:
            progress(done, len(turns))
    return result


@transaction.atomic
def nugget_dedup_store(*, nuggets: list[Nugget], duplicate_of: dict[int, int | None], target: Judge) -> None:
    """Mark one turn's duplicates in the source set and copy its survivors to the target judge."""
    nugget_duplicates_mark(marks={nugget.id: duplicate_of[nugget.id] for nugget in nuggets})
    nuggets_create(
        nuggets=[
            Nugget(
                judge=target,
                turn_id=n.turn_id,
                key=n.key,
                text=n.text,
                passage_id=n.passage_id,
                start=n.start,
                end=n.end,
                relevance=n.relevance,
                response_id=n.response_id,
                original=n,
            )
            for n in sorted(nuggets, key=nugget_order_key)
            if duplicate_of[n.id] is None
        ]
    )
