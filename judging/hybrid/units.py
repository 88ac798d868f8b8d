"""The per-unit values of a measure under one judge, lined up for a human and a machine judge.

The sampling unit is what people are handed as one piece of work, so that a sampled unit is judged whole:

* **turn** (every task): relevance assessors judge a turn's whole pool (`assignment_create` hands out
  turns), support assessors a topic's units, crowd campaigns a turn's responses. A run's measure is the
  mean over turns of its per-turn value (nDCG@5 of the turn's ranking, the weighted support precision of
  its answer, the NtR recall of its response), so PPI on the per-turn values with turns as the sampling
  unit estimates exactly the run's score, whatever the measure (nDCG's normalisation included).
* **pair** (relevance, `relevant_share` only): a single (turn, passage) pair, for the share of pooled
  pairs graded at least T, which is a plain mean over pairs.

A table holds, per run (rows) and unit (columns), the machine value (NaN where the run has none, e.g. a
support run that did not answer a topic) and the human value (NaN where the human has no label). The
machine values define the population: the units the machine judge labelled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Model

from annotation.families import LABEL_TASKS
from annotation.labels.family import Hybrid
from annotation.models import (
    Collection,
    Judge,
    NuggetSetTurn,
    Ranking,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    Run,
    Topic,
    Turn,
)
from annotation.relevance.family import RELEVANT_SHARE
from annotation.selectors import qrels_dict, runs_dict
from core.ordering import natural_key
from core.wording import plural
from judging.measures.hybrid.table import UnitTable
from judging.measures.nuggets import NuggetMetricsError
from judging.models import HumanSample, SampleUnit
from judging.scores.nuggets import nugget_metrics
from judging.scores.rag_nuggets import nugget_scores
from judging.scores.relevance import answer_only_runs
from judging.scores.support import support_scores

# The tasks whose family declares hybrid measures (annotation/<family>/family.py), and those measures.
HYBRID: dict[str, Hybrid] = {
    name: task.hybrid for name, task in LABEL_TASKS.items() if task.hybrid is not None
}
TASKS = tuple(HYBRID)
# What every unit table and estimate reads besides its task's labels: the judges, the collection's
# topics, turns, runs and their rankings and answers, the nugget sets' topics (which topics a nugget
# evaluation covers), and the stored human samples.
COLLECTION_READS: tuple[type[Model], ...] = (
    Judge,
    NuggetSetTurn,
    Topic,
    Turn,
    Run,
    Ranking,
    Response,
    ResponseSentence,
    HumanSample,
    SampleUnit,
)
POOL_ROW = "pool"
UNITS = ("turn", "pair")


class UnitsError(ValueError):
    """The values cannot be gathered as asked (unknown measure, judge without labels, ...)."""


def table_reads(task: str) -> tuple[type[Model], ...]:
    """The tables a unit table (an estimate, a budget simulation) of `task` reads: a write to any of them
    makes its stored figures stale."""
    return (*COLLECTION_READS, *HYBRID[task].reads)


def measures_for(task: str) -> str:
    """The measure names a task accepts, for error messages."""
    return HYBRID[task].describe()


def _measure_check(task: str, measure: str) -> None:
    if measure not in HYBRID[task].measures:
        raise UnitsError(f"unknown {task} measure {measure!r}; use {measures_for(task)}")


def _matrix(
    rows: list[str], keys: list[str], values: dict[tuple[str, str], float], default: float = np.nan
) -> np.ndarray:
    column = {k: j for j, k in enumerate(keys)}
    row = {r: i for i, r in enumerate(rows)}
    out = np.full((len(rows), len(keys)), default)
    for (r, k), v in values.items():
        if r in row and k in column:
            out[row[r], column[k]] = v
    return out


# --- relevance ---------------------------------------------------------------------------------------


def _parse_measure(measure: str) -> Any:
    import ir_measures

    try:
        return ir_measures.parse_measure(measure)
    except Exception:  # ir_measures raises several types for a name it cannot read
        raise UnitsError(f"unknown measure {measure!r}; use {measures_for('relevance')}") from None


def relevance_turn_values(
    *,
    qrels: dict[str, dict[str, int]],
    turns: list[str],
    rankings: dict[str, dict[str, dict[str, float]]],
    measure: str,
) -> dict[tuple[str, str], float]:
    """{(run, turn): value} of an ir_measures measure on `turns`, 0 where a run has no ranking for a turn
    (the trec_eval -c convention `judging.scores.relevance` follows)."""
    import ir_measures

    parsed = _parse_measure(measure)
    subset = {t: qrels.get(t, {}) for t in turns}
    evaluator = ir_measures.evaluator([parsed], {t: q for t, q in subset.items() if q})
    values: dict[tuple[str, str], float] = {}
    for run, ranked in rankings.items():
        for turn in turns:
            values[(run, turn)] = 0.0
        for metric in evaluator.iter_calc({t: d for t, d in ranked.items() if t in subset and d}):
            values[(run, metric.query_id)] = float(metric.value)
    return values


def _grades(*, collection: Collection, judge: Judge) -> dict[tuple[str, str], int]:
    return {
        (turn_id, passage_id): grade
        for turn_id, passage_id, grade in RelevanceJudgment.objects.filter(
            judge=judge, turn__collection=collection
        ).values_list("turn__turn_id", "passage_id", "grade")
    }


def relevance_table(
    *,
    collection: Collection,
    human: Judge,
    machine: Judge,
    measure: str,
    unit: str = "turn",
    rel_threshold: int = 2,
) -> UnitTable:
    if unit not in UNITS:
        raise UnitsError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    machine_grades = _grades(collection=collection, judge=machine)
    if not machine_grades:
        raise UnitsError(f"machine judge {machine.name} has no relevance labels on {collection.name}")
    human_grades = _grades(collection=collection, judge=human)
    notes: list[str] = []
    outside = sum(1 for pair in human_grades if pair not in machine_grades)
    if outside:
        notes.append(
            f"{plural(outside, 'human label')} on pairs the machine did not label "
            f"{'is' if outside == 1 else 'are'} not used"
        )
    if measure == RELEVANT_SHARE:
        if unit == "pair":
            keys = sorted(machine_grades, key=lambda p: (natural_key(p[0]), p[1]))
            machine_v = {
                (POOL_ROW, f"{t}\t{p}"): float(g >= rel_threshold) for (t, p), g in machine_grades.items()
            }
            human_v = {
                (POOL_ROW, f"{t}\t{p}"): float(g >= rel_threshold)
                for (t, p), g in human_grades.items()
                if (t, p) in machine_grades
            }
            names = [f"{t}\t{p}" for t, p in keys]
            return UnitTable(
                task="relevance",
                measure=measure,
                unit=unit,
                keys=names,
                runs=[POOL_ROW],
                machine=_matrix([POOL_ROW], names, machine_v),
                human=_matrix([POOL_ROW], names, human_v),
                notes=notes,
            )
        # Per turn: the turn's count of relevant pairs, scaled so that the mean over turns is the share.
        pairs_of: dict[str, list[str]] = defaultdict(list)
        for t, p in machine_grades:
            pairs_of[t].append(p)
        turns = sorted(pairs_of, key=natural_key)
        scale = len(turns) / len(machine_grades)
        machine_v, human_v = {}, {}
        human_turns = {t for t, _p in human_grades}
        unjudged = 0
        for t in turns:
            machine_v[(POOL_ROW, t)] = scale * sum(
                machine_grades[(t, p)] >= rel_threshold for p in pairs_of[t]
            )
            if t in human_turns:
                unjudged += sum((t, p) not in human_grades for p in pairs_of[t])
                human_v[(POOL_ROW, t)] = scale * sum(
                    human_grades.get((t, p), -1) >= rel_threshold for p in pairs_of[t]
                )
        if unjudged:
            notes.append(
                f"{plural(unjudged, 'pair')} of human-judged turns {'has' if unjudged == 1 else 'have'} no human "
                "label; counted not relevant"
            )
        return UnitTable(
            task="relevance",
            measure=measure,
            unit=unit,
            keys=turns,
            runs=[POOL_ROW],
            machine=_matrix([POOL_ROW], turns, machine_v),
            human=_matrix([POOL_ROW], turns, human_v),
            notes=notes,
        )
    if unit == "pair":
        raise UnitsError(
            f"pair units serve only {RELEVANT_SHARE}: a per-turn measure such as {measure} needs whole turns"
        )
    _parse_measure(measure)
    machine_q = qrels_dict(collection=collection, judge=machine)
    human_q = qrels_dict(collection=collection, judge=human)
    turns = sorted(machine_q, key=natural_key)
    answer_only = answer_only_runs(collection)
    runs = list(Run.objects.filter(collection=collection).exclude(name__in=answer_only).order_by("name"))
    if not runs:
        raise UnitsError(f"collection {collection.name} has no runs with rankings")
    if answer_only:
        notes.append(
            f"{plural(len(answer_only), 'answer-only run')} (responses, no ranking) left out of {measure}: "
            + ", ".join(answer_only)
        )
    by_run = runs_dict(runs=runs, turn_ids=turns)
    rankings = {run.name: by_run.get(run.pk, {}) for run in runs}
    names = [run.name for run in runs]
    machine_v = relevance_turn_values(qrels=machine_q, turns=turns, rankings=rankings, measure=measure)
    labelled = [t for t in turns if t in human_q]
    human_v = relevance_turn_values(qrels=human_q, turns=labelled, rankings=rankings, measure=measure)
    return UnitTable(
        task="relevance",
        measure=measure,
        unit="turn",
        keys=turns,
        runs=names,
        machine=_matrix(names, turns, machine_v),
        human=_matrix(names, turns, human_v),
        notes=notes,
    )


# --- per-turn measures of support, NtR and nugget assignment ------------------------------------------
#
# Each gives {(run, turn): value} under the machine and the human judge; `turn_table` lines them up.


@dataclass
class TurnValues:
    """A measure's values per (run, turn) under both judges; the machine's runs and turns are the rows
    and columns of the table."""

    runs: list[str]
    turns: list[str]
    machine: dict[tuple[str, str], float]
    human: dict[tuple[str, str], float]


def support_values(*, collection: Collection, human: Judge, machine: Judge, measure: str) -> TurnValues:
    """Per (run, turn): the answer's weighted support precision or recall (`judging.scores.support`)."""

    m_scores = support_scores(collection=collection, judge=machine)
    if not m_scores["runs"]:
        raise UnitsError(f"machine judge {machine.name} has no support labels on {collection.name}")
    h_scores = support_scores(collection=collection, judge=human)
    precision = measure == "weighted_precision"

    def value(score: Any) -> float:
        return float(score["weighted_precision"] if precision else score["weighted_recall"])

    machine_v = {(r, t): value(s) for r, topics in m_scores["per_topic"].items() for t, s in topics.items()}
    human_v = {(r, t): value(s) for r, topics in h_scores["per_topic"].items() for t, s in topics.items()}
    runs = sorted(m_scores["per_topic"])
    turns = sorted({t for topics in m_scores["per_topic"].values() for t in topics}, key=natural_key)
    return TurnValues(runs, turns, machine_v, human_v)


def ntr_values(
    *, collection: Collection, human: Judge, machine: Judge, gold: Judge | None, measure: str
) -> TurnValues:
    """Per (run, turn with gold nuggets): the response's NtR recall (`judging.scores.nuggets`).

    A turn counts as human-labelled when the human judged any (response, gold nugget) pair on it; there,
    pairs the human left unjudged count as no match, as the metric counts them.
    """

    assert gold is not None
    try:
        m_report = nugget_metrics(collection=collection, gold_judge=gold, ntr_judge=machine)
        h_report = nugget_metrics(collection=collection, gold_judge=gold, ntr_judge=human)
    except NuggetMetricsError as exc:
        raise UnitsError(str(exc)) from None
    runs = sorted(r.run for r in m_report.runs)
    turns = sorted({s.turn_id for r in m_report.runs for s in r.turns}, key=natural_key)
    machine_v = {(r.run, s.turn_id): s.recall for r in m_report.runs for s in r.turns}
    judged_turns = {
        s.turn_id for r in h_report.runs for s in r.turns if s.response_id is not None and s.unjudged < s.gold
    }
    human_v = {
        (r.run, s.turn_id): s.recall for r in h_report.runs for s in r.turns if s.turn_id in judged_turns
    }
    return TurnValues(runs, turns, machine_v, human_v)


def nugget_assignment_values(
    *, collection: Collection, human: Judge, machine: Judge, measure: str
) -> TurnValues:
    """Per (run, turn): the answer's TREC RAG nugget score (`judging.scores.rag_nuggets`) under each
    judge's assignments, each nugget's vital/okay by the default rule (the judge's own label, else the
    nugget list's); a run's score is their mean."""

    # Only the answers each judge labelled: a unit a person has not labelled yet is missing, not a 0.
    machine_answers = nugget_scores(collection=collection, judge=machine, answered_only=True)["answers"]
    if not machine_answers:
        raise UnitsError(f"machine judge {machine.name} has assigned no nuggets on {collection.name}")
    human_answers = nugget_scores(collection=collection, judge=human, answered_only=True)["answers"]
    machine_v = {(a["run_id"], a["qid"]): a[measure] for a in machine_answers}  # type: ignore[literal-required]
    human_v = {(a["run_id"], a["qid"]): a[measure] for a in human_answers}  # type: ignore[literal-required]
    runs = sorted({a["run_id"] for a in machine_answers})
    turns = sorted({a["qid"] for a in machine_answers}, key=natural_key)
    return TurnValues(runs, turns, machine_v, human_v)


def turn_table(*, task: str, measure: str, values: TurnValues) -> UnitTable:
    """The unit table of a measure's per-(run, turn) values."""
    return UnitTable(
        task=task,
        measure=measure,
        unit="turn",
        keys=values.turns,
        runs=values.runs,
        machine=_matrix(values.runs, values.turns, values.machine),
        human=_matrix(values.runs, values.turns, values.human),
    )


def unit_table(
    *,
    collection: Collection,
    task: str,
    measure: str,
    human: Judge | Sequence[Judge],
    machine: Judge,
    unit: str = "turn",
    rel_threshold: int = 2,
    gold: Judge | None = None,
) -> UnitTable:
    """The values of `measure` under both judges, per run and sampling unit.

    `human` may be several judges (assessors who shared out the sample): see `human_values_merge`.
    """
    if task not in TASKS:
        raise UnitsError(f"task must be one of {', '.join(TASKS)}, not {task!r}")
    if not isinstance(human, Judge):
        judges = list(dict.fromkeys(human))
        if not judges:
            raise UnitsError("give at least one human judge")
        tables = [
            unit_table(
                collection=collection,
                task=task,
                measure=measure,
                human=judge,
                machine=machine,
                unit=unit,
                rel_threshold=rel_threshold,
                gold=gold,
            )
            for judge in judges
        ]
        return human_values_merge(tables, names=[j.name for j in judges])
    if task == "relevance":
        return relevance_table(
            collection=collection,
            human=human,
            machine=machine,
            measure=measure,
            unit=unit,
            rel_threshold=rel_threshold,
        )
    if unit != "turn":
        raise UnitsError(f"{task} is sampled by turn; pair units serve only relevance {RELEVANT_SHARE}")
    if HYBRID[task].needs_gold and gold is None:
        raise UnitsError(f"{task} needs the gold nugget judge (--gold-judge)")
    _measure_check(task, measure)
    if task == "support":
        values = support_values(collection=collection, human=human, machine=machine, measure=measure)
    elif task == "nugget-assignment":
        values = nugget_assignment_values(
            collection=collection, human=human, machine=machine, measure=measure
        )
    else:
        values = ntr_values(collection=collection, human=human, machine=machine, gold=gold, measure=measure)
    return turn_table(task=task, measure=measure, values=values)


def human_values_merge(tables: list[UnitTable], *, names: list[str]) -> UnitTable:
    """One table whose human value on each (run, unit) is the mean of the values the judges have there.

    Meant for assessors who labelled disjoint parts of one sample: each unit then has one judge's value.
    Where several judges labelled the same unit, the unit's value is their mean (the per-turn measure
    averaged over the assessors of that turn, not a merge of their labels), so the estimand stays "the
    mean over units of the human value" with that value defined as the assessors' average. The machine
    values, which define the units and runs, are the same in every table.
    """
    first = tables[0]
    if len(tables) == 1:
        return first
    for other in tables[1:]:
        if other.keys != first.keys or other.runs != first.runs:
            raise UnitsError("the human judges' tables do not share the machine judge's units")
    stacked = np.stack([t.human for t in tables])
    counts = (~np.isnan(stacked)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        merged = np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)
    notes = list(dict.fromkeys(n for t in tables for n in t.notes))
    shared = int((counts > 1).any(axis=0).sum())
    notes.append(f"human values of {plural(len(tables), 'judge')} ({', '.join(names)}) merged")
    if shared:
        notes.append(
            f"{plural(shared, 'unit')} {'has' if shared == 1 else 'have'} values from more than one human "
            "judge: their mean is used"
        )
    return UnitTable(
        task=first.task,
        measure=first.measure,
        unit=first.unit,
        keys=first.keys,
        runs=first.runs,
        machine=first.machine,
        human=merged,
        notes=notes,
    )
