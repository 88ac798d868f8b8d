"""Nugget recall and precision of RAG runs (CONE-RAG, iKAT 2024), against any gold nugget set.

For one turn with gold nuggets G and a run's response to it:

* **Recall_NtN** = |{g in G : some response nugget r entails g}| / |G|
* **Precision_NtN** = |{r in R : r entails some g in G}| / |R|, where R are the nuggets extracted from the
  response (an extraction judge's Nugget rows linked to the response; rows without a response link
  count for every response of their turn, for extraction judges that hold one run each)
* **Recall_NtR** = |{g in G : the NtR judge says the response captures g}| / |G|; NtR gives no precision.

"Entails" is an NtnJudgment of the NtN judge (premise: the response nugget, hypothesis: the gold nugget).
A run's figure is the macro average over turns. The rules for the turns that do not fit:

* **A turn without gold nuggets is left out** of every average: nothing can be recalled there (the
  trec_eval convention for queries without relevant documents). The report counts such turns.
* **A turn with gold nuggets but no response of the run, or a response with no extracted nuggets,
  scores 0** for recall and for precision, and counts in the average: an answer that says nothing earns
  nothing, and leaving such turns out would reward a run for not answering hard turns.
* **Unjudged pairs count as no match** (as trec_eval counts unjudged documents non-relevant); the report
  gives how many pairs were unjudged so a reader sees how complete the judging was.
* Only the rank-1 response of a run for a turn is evaluated (iKAT runs may rank several).

A turn is **personal** when a PTKB statement is relevant to it: a PtkbJudgment with `relevant` (of the
given PTKB judge, or of any judge), or a non-empty `ptkb_provenance` on the turn. Averages are reported
over all turns, personal turns and non-personal turns. Runs are ranked by recall, ties sharing a rank.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from annotation.models import (
    Collection,
    Judge,
    NtnJudgment,
    NtrJudgment,
    Nugget,
    PtkbJudgment,
    Response,
    Run,
    Turn,
)
from annotation.selectors import natural_key

Mode = Literal["ntn", "ntr"]


class NuggetMetricsError(ValueError):
    """The metrics cannot be computed as asked (wrong combination of judges, a judge without labels)."""


# --- Per-turn arithmetic (pure, so the rules can be checked by hand) -------------------------------


def ntn_turn_scores(
    *, gold: Iterable[int], response_nuggets: Iterable[int], entails: set[tuple[int, int]]
) -> tuple[float, float]:
    """(Recall_NtN, Precision_NtN) of one turn; `entails` holds (response nugget, gold nugget) pairs.

    Raises for a turn without gold nuggets (left out of averages by the caller). No response nuggets
    scores (0, 0).
    """
    gold_set, premises = set(gold), set(response_nuggets)
    if not gold_set:
        raise NuggetMetricsError("a turn without gold nuggets has no recall")
    if not premises:
        return 0.0, 0.0
    matched = {(r, g) for r, g in entails if r in premises and g in gold_set}
    recall = len({g for _, g in matched}) / len(gold_set)
    precision = len({r for r, _ in matched}) / len(premises)
    return recall, precision


def ntr_turn_recall(*, gold: Iterable[int], matched: Iterable[int]) -> float:
    """Recall_NtR of one turn: the share of gold nuggets the response captures."""
    gold_set = set(gold)
    if not gold_set:
        raise NuggetMetricsError("a turn without gold nuggets has no recall")
    return len(gold_set & set(matched)) / len(gold_set)


def macro(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


# --- Report ----------------------------------------------------------------------------------------


@dataclass
class TurnScore:
    turn_id: str
    personal: bool
    gold: int
    response_id: int | None
    response_nuggets: int | None
    recall: float
    precision: float | None
    unjudged: int = 0


@dataclass
class Averages:
    turns: int
    recall: float | None
    precision: float | None


@dataclass
class RunScore:
    run: str
    all: Averages
    personal: Averages
    non_personal: Averages
    rank: int = 0
    unjudged: int = 0
    turns: list[TurnScore] = field(default_factory=list)


@dataclass
class NuggetMetricsReport:
    collection: str
    gold_judge: str
    mode: Mode
    matching_judge: str
    response_nugget_judge: str | None
    turns_with_gold: int
    turns_without_gold: int
    runs: list[RunScore]

    def as_dict(self, *, per_turn: bool = True) -> dict[str, Any]:
        data = asdict(self)
        if not per_turn:
            for run in data["runs"]:
                run.pop("turns")
        return data


def _averages(scores: list[TurnScore], mode: Mode) -> Averages:
    return Averages(
        turns=len(scores),
        recall=macro([s.recall for s in scores]),
        precision=macro([s.precision for s in scores]) if mode == "ntn" else None,
    )


def personal_turn_ids(*, collection: Collection, ptkb_judge: Judge | None = None) -> set[int]:
    """Turns with a relevant PTKB statement: judged relevant, or named in the turn's ptkb_provenance."""
    judgments = PtkbJudgment.objects.filter(turn__collection=collection, relevant=True)
    if ptkb_judge is not None:
        judgments = judgments.filter(judge=ptkb_judge)
    personal = set(judgments.values_list("turn_id", flat=True))
    for turn_id, provenance in Turn.objects.filter(collection=collection).values_list(
        "id", "ptkb_provenance"
    ):
        if provenance:
            personal.add(turn_id)
    return personal


def nugget_metrics(
    *,
    collection: Collection,
    gold_judge: Judge,
    response_nugget_judge: Judge | None = None,
    ntn_judge: Judge | None = None,
    ntr_judge: Judge | None = None,
    runs: Sequence[str] | None = None,
    ptkb_judge: Judge | None = None,
) -> NuggetMetricsReport:
    """Recall/precision NtN (with a response-nugget judge and an NtN judge) or recall NtR (with an NtR
    judge) of every run of the collection, per turn and macro-averaged, ranked by recall."""
    if ntr_judge is not None and (ntn_judge is not None or response_nugget_judge is not None):
        raise NuggetMetricsError("give either an NtR judge or a response-nugget judge with an NtN judge")
    if ntr_judge is None and (ntn_judge is None or response_nugget_judge is None):
        raise NuggetMetricsError("NtN metrics need both a response-nugget judge and an NtN judge")
    mode: Mode = "ntr" if ntr_judge is not None else "ntn"

    gold_by_turn: dict[int, list[int]] = defaultdict(list)
    # A de-duplicated gold set is a copy whose nuggets point at their originals: labels given on an
    # original count for its copy, so NtN/NtR labels need not be made again for the de-duplicated set.
    copy_of_original: dict[int, int] = {}
    for nugget_id, gold_turn, original_id in Nugget.objects.filter(
        judge=gold_judge, turn__collection=collection
    ).values_list("id", "turn_id", "original_id"):
        gold_by_turn[gold_turn].append(nugget_id)
        if original_id is not None:
            copy_of_original[original_id] = nugget_id
    label_targets = [n for ids in gold_by_turn.values() for n in ids] + list(copy_of_original)
    if not gold_by_turn:
        raise NuggetMetricsError(f"judge {gold_judge.name!r} has no nuggets in {collection.name}")
    turns = sorted(
        Turn.objects.filter(collection=collection, id__in=gold_by_turn).values_list("id", "turn_id"),
        key=lambda row: natural_key(row[1]),
    )
    all_turns = Turn.objects.filter(collection=collection).count()
    personal = personal_turn_ids(collection=collection, ptkb_judge=ptkb_judge)

    run_qs = Run.objects.filter(collection=collection)
    if runs is not None:
        run_qs = run_qs.filter(name__in=list(runs))
        missing = set(runs) - set(run_qs.values_list("name", flat=True))
        if missing:
            raise NuggetMetricsError(f"no such runs in {collection.name}: {', '.join(sorted(missing))}")
    run_list = list(run_qs.order_by("name"))

    # The rank-1 response of each (run, turn).
    first_response: dict[tuple[int, int], int] = {}
    for first_id, run_id, first_turn in (
        Response.objects.filter(run__in=run_list, turn_id__in=gold_by_turn)
        .order_by("-rank", "-id")
        .values_list("id", "run_id", "turn_id")
    ):
        first_response[(run_id, first_turn)] = first_id

    # Response nuggets per response (linked) or per turn (unlinked), and the positive pairs.
    linked: dict[int, list[int]] = defaultdict(list)
    unlinked: dict[int, list[int]] = defaultdict(list)
    labels: Iterable[tuple[int, int, bool]]
    if mode == "ntn":
        assert response_nugget_judge is not None and ntn_judge is not None
        for nugget_id, nugget_turn, nugget_response in Nugget.objects.filter(
            judge=response_nugget_judge, turn_id__in=gold_by_turn
        ).values_list("id", "turn_id", "response_id"):
            (linked[nugget_response] if nugget_response else unlinked[nugget_turn]).append(nugget_id)
        labels = NtnJudgment.objects.filter(judge=ntn_judge, gold_nugget_id__in=label_targets).values_list(
            "response_nugget_id", "gold_nugget_id", "entails"
        )
    else:
        labels = NtrJudgment.objects.filter(judge=ntr_judge, nugget_id__in=label_targets).values_list(
            "response_id", "nugget_id", "matched"
        )
    # Carried labels first, so a label given on the copy itself wins over its original's.
    label_of: dict[tuple[int, int], bool] = {}
    for unit, gold_id, positive in sorted(labels, key=lambda row: row[1] not in copy_of_original):
        label_of[(unit, copy_of_original.get(gold_id, gold_id))] = positive
    judged = set(label_of)
    positives = {pair for pair, positive in label_of.items() if positive}

    scores: list[RunScore] = []
    for run in run_list:
        turn_scores: list[TurnScore] = []
        for turn_pk, turn_id in turns:
            gold = gold_by_turn[turn_pk]
            response_id = first_response.get((run.id, turn_pk))
            score = TurnScore(
                turn_id=turn_id,
                personal=turn_pk in personal,
                gold=len(gold),
                response_id=response_id,
                response_nuggets=None,
                recall=0.0,
                precision=0.0 if mode == "ntn" else None,
            )
            if response_id is not None and mode == "ntn":
                premises = linked.get(response_id, []) + unlinked.get(turn_pk, [])
                score.response_nuggets = len(premises)
                score.recall, score.precision = ntn_turn_scores(
                    gold=gold, response_nuggets=premises, entails=positives
                )
                score.unjudged = sum(1 for r in premises for g in gold if (r, g) not in judged)
            elif response_id is not None:
                score.recall = ntr_turn_recall(
                    gold=gold, matched=[g for g in gold if (response_id, g) in positives]
                )
                score.unjudged = sum(1 for g in gold if (response_id, g) not in judged)
            turn_scores.append(score)
        scores.append(
            RunScore(
                run=run.name,
                all=_averages(turn_scores, mode),
                personal=_averages([s for s in turn_scores if s.personal], mode),
                non_personal=_averages([s for s in turn_scores if not s.personal], mode),
                unjudged=sum(s.unjudged for s in turn_scores),
                turns=turn_scores,
            )
        )

    # Rank by recall, best first; equal recalls share the better rank ("1, 2, 2, 4").
    scores.sort(key=lambda s: (-(s.all.recall or 0.0), s.run))
    for position, run_score in enumerate(scores, start=1):
        previous = scores[position - 2] if position > 1 else None
        same = previous is not None and previous.all.recall == run_score.all.recall
        run_score.rank = previous.rank if same and previous is not None else position

    matching = ntr_judge if ntr_judge is not None else ntn_judge
    assert matching is not None
    return NuggetMetricsReport(
        collection=collection.name,
        gold_judge=gold_judge.name,
        mode=mode,
        matching_judge=matching.name,
        response_nugget_judge=response_nugget_judge.name if response_nugget_judge else None,
        turns_with_gold=len(turns),
        turns_without_gold=all_turns - len(turns),
        runs=scores,
    )
