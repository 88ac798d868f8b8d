"""Retrieval evaluation of runs against one judge's relevance labels, computed by ir_measures.

The measures are the iKAT 2024 passage-ranking set: nDCG@5 (primary, graded gains 0-4 as trec_eval's
`ndcg_cut` uses them), P@20, R@20, R@1000 and MAP with a binary relevance threshold, and Judged@10 beside
them so a reader sees how much of each run's head the judge actually assessed.

Two choices decide which turns count, and both follow the iKAT / trec_eval conventions:

* **Only judged turns are evaluated.** The turns are those present in the judge's qrels (iKAT 2024
  assessed 116 of its 218 turns); a run's rankings for other turns are ignored.
* **A run missing a judged turn scores 0 on it**, for every measure, and the mean is over all judged
  turns, as `trec_eval -c` does. Without this a run could raise its mean by leaving hard turns out.

As in trec_eval, a run's scores (not the ranks written in its file) order its passages; ties are broken
by ir_measures' providers. Judged@10 is ir_measures' share of the top 10 that the judge labelled, over
the number of passages retrieved when a run holds fewer than 10.

Measures are named as ir_measures names them (`nDCG@5`, `P(rel=2)@20`, `AP(rel=2)`, `Judged@10`), so
the numbers here equal `ir_measures.calc_aggregate` run on the exported qrels and the run files.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ir_measures
from ir_measures import AP, Judged, P, R, nDCG

from annotation.models import Collection, Judge, RelevanceGrade, Run
from annotation.selectors import natural_key, qrels_by_judge, qrels_dict, runs_dict

DEFAULT_REL_THRESHOLD = 2
PRIMARY_MEASURE = "nDCG@5"


class EvaluationError(ValueError):
    """The evaluation cannot be computed as asked (bad threshold, a judge without labels, ...)."""


def evaluation_measures(*, rel_threshold: int = DEFAULT_REL_THRESHOLD) -> list[Any]:
    """The ir_measures measures in display order; `rel_threshold` is the lowest grade counted relevant
    by the binary measures (P, R, AP). nDCG uses the grades themselves and Judged any label at all."""
    if isinstance(rel_threshold, bool) or not isinstance(rel_threshold, int):
        raise EvaluationError(f"relevance threshold must be an integer, not {rel_threshold!r}")
    lowest, highest = RelevanceGrade.SLIGHTLY.value, RelevanceGrade.FULLY.value
    if not lowest <= rel_threshold <= highest:
        # 0 would count passages judged "fails to meet" as relevant.
        raise EvaluationError(
            f"relevance threshold must be between {lowest} and {highest}, not {rel_threshold}"
        )
    t = rel_threshold
    return [nDCG @ 5, P(rel=t) @ 20, R(rel=t) @ 20, R(rel=t) @ 1000, AP(rel=t), Judged @ 10]


@dataclass
class Evaluation:
    """Mean and per-turn scores of runs. `per_turn` holds every judged turn of every run, zeros included
    for turns a run lacks (listed in `missing`)."""

    collection: str
    judge: str
    rel_threshold: int
    measures: list[str]
    turns: list[str]
    runs: dict[str, dict[str, float]] = field(default_factory=dict)
    per_turn: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)

    @property
    def primary(self) -> str:
        return PRIMARY_MEASURE

    def ranked_runs(self) -> list[str]:
        """Run names, best primary score first, ties by name."""
        return sorted(self.runs, key=lambda name: (-self.runs[name][PRIMARY_MEASURE], name))

    def as_json(self) -> dict[str, Any]:
        """The `--format json` shape: {"runs": {run: {measure: value}}, "per_turn": {run: {turn: {...}}}}."""
        return {"runs": self.runs, "per_turn": self.per_turn}


def runs_evaluate(
    *,
    collection: Collection,
    judge: Judge,
    runs: Iterable[Run] | None = None,
    rel_threshold: int = DEFAULT_REL_THRESHOLD,
    measures: list[Any] | None = None,
) -> Evaluation:
    """Score runs of `collection` (all of them unless `runs` is given) against `judge`'s relevance labels.

    Only turns the judge assessed count; a run without a ranking for one of them scores 0 there
    (trec_eval -c). Raises EvaluationError if the judge has no relevance labels on the collection.
    """
    # `measures` narrows the evaluation to what a caller needs (the primary measure, nDCG@5, must stay
    # among them for ranked_runs): ir_measures spends most of an evaluation on each per-turn value.
    measures = measures or evaluation_measures(rel_threshold=rel_threshold)
    qrels = qrels_dict(collection=collection, judge=judge)
    if not qrels:
        raise EvaluationError(
            f"judge {judge.name} has no relevance judgments on collection {collection.name}"
        )
    selected = _runs_of(collection, runs)
    return _evaluate(
        collection=collection,
        judge=judge,
        qrels=qrels,
        runs=selected,
        rankings=runs_dict(runs=selected, turn_ids=qrels),
        rel_threshold=rel_threshold,
        measures=measures,
    )


def runs_evaluate_judges(
    *,
    collection: Collection,
    judges: Sequence[Judge],
    rel_threshold: int = DEFAULT_REL_THRESHOLD,
    measures: list[Any] | None = None,
    qrels: dict[int, dict[str, dict[str, int]]] | None = None,
    head: int | None = None,
) -> dict[int, Evaluation]:
    """{judge id: `runs_evaluate` of every run of the collection} for several judges, reading the runs'
    rankings once and every judge's labels in one query: a report that ranks runs under each of some
    fifteen judges spent most of its time re-reading the same rankings. Judges without relevance labels
    on the collection are left out. `qrels` ({judge id: qrels}) spares reading labels the caller holds.

    `head`, for measures that look no deeper than a cutoff (nDCG@5 looks at 5), keeps of each ranking
    only the passages that can reach its first `head` places: those scoring at least its head-th best
    score, ties included, so the passages a run puts first are the same and so are the numbers, while
    ir_measures handles a few passages per ranking instead of hundreds."""
    measures = measures or evaluation_measures(rel_threshold=rel_threshold)
    if qrels is None:
        qrels = qrels_by_judge(collection=collection, judges=judges)
    selected = _runs_of(collection, None)
    assessed: set[str] = set().union(*qrels.values())
    rankings = runs_dict(runs=selected, turn_ids=assessed) if assessed else {}
    if head is not None:
        rankings = {
            run: {turn: _head(docs, head) for turn, docs in turns.items()} for run, turns in rankings.items()
        }
    return {
        judge.id: _evaluate(
            collection=collection,
            judge=judge,
            qrels=qrels[judge.id],
            runs=selected,
            rankings=rankings,
            rel_threshold=rel_threshold,
            measures=measures,
        )
        for judge in judges
        if qrels.get(judge.id)
    }


def _head(docs: dict[str, float], k: int) -> dict[str, float]:
    if len(docs) <= k:
        return docs
    cut = heapq.nlargest(k, docs.values())[-1]
    return {doc: score for doc, score in docs.items() if score >= cut}


def _runs_of(collection: Collection, runs: Iterable[Run] | None) -> list[Run]:
    selected = list(collection.runs.all()) if runs is None else list(runs)
    for run in selected:
        if run.collection_id != collection.id:
            raise EvaluationError(f"run {run.name} is not a run of collection {collection.name}")
    return selected


def _evaluate(
    *,
    collection: Collection,
    judge: Judge,
    qrels: dict[str, dict[str, int]],
    runs: list[Run],
    rankings: dict[int, dict[str, dict[str, float]]],
    rel_threshold: int,
    measures: list[Any],
) -> Evaluation:
    """The evaluation of `runs` against `qrels`; `rankings` may hold turns the judge did not assess."""
    names = [str(m) for m in measures]
    turns = sorted(qrels, key=natural_key)
    # One evaluator for all runs: it indexes the qrels once.
    evaluator = ir_measures.evaluator(measures, qrels)
    result = Evaluation(
        collection=collection.name, judge=judge.name, rel_threshold=rel_threshold, measures=names, turns=turns
    )
    # ir_measures names each per-turn value by its measure object; naming them once saves rebuilding the
    # same name for every value.
    named: dict[int, str] = {}
    for run in sorted(runs, key=lambda r: r.name):
        ranked = {turn: docs for turn, docs in rankings.get(run.pk, {}).items() if turn in qrels and docs}
        scores: dict[str, dict[str, float]] = {turn: dict.fromkeys(names, 0.0) for turn in turns}
        # A run without a ranking on any judged turn scores every measure's default, 0, everywhere:
        # ir_measures is not asked to say so turn by turn.
        for metric in evaluator.iter_calc(ranked) if ranked else ():
            name = named.get(id(metric.measure))
            if name is None:
                name = named[id(metric.measure)] = str(metric.measure)
            scores[metric.query_id][name] = float(metric.value)
        result.per_turn[run.name] = scores
        result.runs[run.name] = {
            name: sum(scores[turn][name] for turn in turns) / len(turns) for name in names
        }
        result.missing[run.name] = [turn for turn in turns if turn not in ranked]
    return result


def evaluation_table(evaluation: Evaluation, *, run: str | None = None) -> str:
    """A plain-text table: one row per run (best primary score first), or per turn of one run."""
    if run is None:
        header = "run"
        rows = [(name, evaluation.runs[name]) for name in evaluation.ranked_runs()]
    else:
        header = "turn"
        rows = [(turn, evaluation.per_turn[run][turn]) for turn in evaluation.turns]
    width = max([len(header)] + [len(label) for label, _ in rows])
    widths = [max(len(m), 6) for m in evaluation.measures]
    lines = [
        "  ".join(
            [header.ljust(width)] + [m.rjust(w) for m, w in zip(evaluation.measures, widths, strict=True)]
        )
    ]
    for label, values in rows:
        cells = [f"{values[m]:.4f}".rjust(w) for m, w in zip(evaluation.measures, widths, strict=True)]
        lines.append("  ".join([label.ljust(width)] + cells))
    return "\n".join(lines) + "\n"
