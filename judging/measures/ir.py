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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ir_measures

from core.ordering import natural_key

PRIMARY_MEASURE = "nDCG@5"


class EvaluationError(ValueError):
    """The evaluation cannot be computed as asked (bad threshold, a judge without labels, ...)."""


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


def ranking_head(docs: dict[str, float], k: int) -> dict[str, float]:
    """The passages of one ranking that can reach its first `k` places: those scoring at least its k-th
    best score, ties included."""
    if len(docs) <= k:
        return docs
    cut = heapq.nlargest(k, docs.values())[-1]
    return {doc: score for doc, score in docs.items() if score >= cut}


def qrels_evaluate(
    *,
    collection: str,
    judge: str,
    qrels: dict[str, dict[str, int]],
    rankings: dict[str, dict[str, dict[str, float]]],
    rel_threshold: int,
    measures: list[Any],
    progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """The evaluation of the runs of `rankings` ({run name: {turn: {passage: score}}}) against `qrels`;
    the rankings may hold turns the judge did not assess. `progress(done, total)` is told after each run."""
    names = [str(m) for m in measures]
    turns = sorted(qrels, key=natural_key)
    # One evaluator for all runs: it indexes the qrels once.
    evaluator = ir_measures.evaluator(measures, qrels)
    result = Evaluation(
        collection=collection, judge=judge, rel_threshold=rel_threshold, measures=names, turns=turns
    )
    # ir_measures names each per-turn value by its measure object; naming them once saves rebuilding the
    # same name for every value.
    named: dict[int, str] = {}
    for run in sorted(rankings):
        ranked = {turn: docs for turn, docs in rankings[run].items() if turn in qrels and docs}
        scores: dict[str, dict[str, float]] = {turn: dict.fromkeys(names, 0.0) for turn in turns}
        # A run without a ranking on any judged turn scores every measure's default, 0, everywhere:
        # ir_measures is not asked to say so turn by turn.
        for metric in evaluator.iter_calc(ranked) if ranked else ():
            name = named.get(id(metric.measure))
            if name is None:
                name = named[id(metric.measure)] = str(metric.measure)
            scores[metric.query_id][name] = float(metric.value)
        result.per_turn[run] = scores
        result.runs[run] = {name: sum(scores[turn][name] for turn in turns) / len(turns) for name in names}
        result.missing[run] = [turn for turn in turns if turn not in ranked]
        if progress is not None:
            progress(len(result.runs), len(rankings))
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
