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

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

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


def averages(scores: list[TurnScore], mode: Mode) -> Averages:
    return Averages(
        turns=len(scores),
        recall=macro([s.recall for s in scores]),
        precision=macro([s.precision for s in scores]) if mode == "ntn" else None,
    )


def rank_by_recall(scores: list[RunScore]) -> None:
    """Sort `scores` by recall, best first, and number them; equal recalls share the better rank
    ("1, 2, 2, 4")."""
    scores.sort(key=lambda s: (-(s.all.recall or 0.0), s.run))
    for position, run_score in enumerate(scores, start=1):
        previous = scores[position - 2] if position > 1 else None
        same = previous is not None and previous.all.recall == run_score.all.recall
        run_score.rank = previous.rank if same and previous is not None else position
