"""Agreement reports: one comparison of two judges, a run ranking under two judges, a whole campaign,
and the live view of assessors, as dicts (the JSON shape), text, CSV and charts.

Reads go through `judging.agreement_units`, figures through `judging.agreement`; this module only puts
them together and draws them. Charts use matplotlib's object API with the Agg canvas (no pyplot state),
so pages can draw them in any thread.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Sequence
from itertools import combinations
from typing import Any, Literal

import numpy as np
from django.utils import timezone
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from annotation.models import Collection, Judge, SupportJudgment
from judging.agreement import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    AgreementUndefined,
    Pairs,
    binarise,
    confusion_matrix,
    disagreement_weights,
    kappa_from_confusion,
    label_agreement,
    rank_agreement,
)
from judging.agreement_units import (
    RUN_MEASURES,
    TASKS,
    judges_with_labels,
    labels_by_judge,
    pairs_from_labels,
    run_scores,
    task_spec,
)

ImageFormat = Literal["svg", "png"]
FIGURE_COLUMNS = [
    "n",
    "exact_agreement",
    "cohen_kappa",
    "weighted_kappa_linear",
    "weighted_kappa_quadratic",
    "krippendorff_alpha",
]


def _agreement(pairs: Pairs, task: str, *, resamples: int, seed: int) -> dict[str, Any]:
    spec = task_spec(task)
    return label_agreement(
        pairs, ordinal=spec.ordinal, alpha_level=spec.alpha_level, resamples=resamples, seed=seed
    )


def comparison_report(
    *,
    collection: Collection,
    task: str,
    judge_a: Judge,
    judge_b: Judge,
    topics: Sequence[str] | None = None,
    condition: str | None = None,
    binary_threshold: float | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Every label-level figure of judge A against judge B on a task (the `agreement --format json` shape).

    Raises ValueError for a bad task, condition or threshold, AgreementUndefined when the judges share
    no unit.
    """
    spec = task_spec(task)
    if binary_threshold is not None and not spec.binarisable:
        raise ValueError(f"a binary threshold applies to relevance only, not to {task}")
    by_judge = labels_by_judge(
        collection=collection, task=task, judges=[judge_a, judge_b], topics=topics, condition=condition
    )
    pairs = pairs_from_labels(task, by_judge[judge_a.id], by_judge[judge_b.id])
    if pairs.n == 0:
        raise AgreementUndefined(
            f"judges {judge_a.name} and {judge_b.name} share no labelled {task} units in collection "
            f"{collection.name}" + (f" (topics {', '.join(topics)})" if topics else "")
        )
    figures = _agreement(pairs, task, resamples=resamples, seed=seed)
    report: dict[str, Any] = {
        "collection": collection.name,
        "task": task,
        "unit": spec.unit,
        "judges": [judge_a.name, judge_b.name],
        "judge_ids": [judge_a.id, judge_b.id],
        "condition": condition,
        "topics": list(topics) if topics else None,
        "labelled_by_a": len(by_judge[judge_a.id]),
        "labelled_by_b": len(by_judge[judge_b.id]),
        "n": figures.pop("n"),
        "labels": figures.pop("labels"),
        "label_names": list(spec.label_names),
    }
    report.update(figures)
    if binary_threshold is not None:
        try:
            binary = label_agreement(
                binarise(pairs, binary_threshold),
                ordinal=False,
                alpha_level="nominal",
                resamples=resamples,
                seed=seed,
            )
        except AgreementUndefined:
            binary = None
        report["binary"] = {"threshold": binary_threshold, **binary} if binary else None
    return report


def rank_report(*, collection: Collection, measure: str, judge_a: Judge, judge_b: Judge) -> dict[str, Any]:
    """Runs scored by `measure` under judge A and judge B, with Kendall's tau-b and Spearman's rho."""
    scores_a = run_scores(collection=collection, measure=measure, judge=judge_a)
    scores_b = run_scores(collection=collection, measure=measure, judge=judge_b)
    return {
        "collection": collection.name,
        "measure": measure,
        "judges": [judge_a.name, judge_b.name],
        "judge_ids": [judge_a.id, judge_b.id],
        **rank_agreement(scores_a=scores_a, scores_b=scores_b),
    }


# --- Text and CSV ----------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    return [
        "  ".join(str(cell).rjust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]
    ]


def comparison_text(report: dict[str, Any]) -> str:
    """A plain-text summary: figures, confusion matrix (counts and row shares), per-topic table."""
    a, b = report["judges"]
    lines = [
        f"{report['task']} agreement on collection {report['collection']}: A = {a}, B = {b}"
        + (f", condition {report['condition']}" if report.get("condition") else ""),
        f"units labelled by both: {report['n']} (A labelled {report['labelled_by_a']}, B {report['labelled_by_b']})",
        f"exact agreement        {_fmt(report['exact_agreement'])}",
        f"Cohen's kappa          {_fmt(report['cohen_kappa'])}"
        + (
            f"  (95% CI {_fmt(report['kappa_ci95'][0])} to {_fmt(report['kappa_ci95'][1])}, "
            f"bootstrap over {report['bootstrap']['topics']} topics, {report['bootstrap']['resamples']} resamples)"
            if report["kappa_ci95"]
            else ""
        ),
    ]
    if report["weighted_kappa_linear"] is not None or report["weighted_kappa_quadratic"] is not None:
        lines.append(f"weighted kappa linear  {_fmt(report['weighted_kappa_linear'])}")
        lines.append(f"weighted kappa quadr.  {_fmt(report['weighted_kappa_quadratic'])}")
    lines.append(f"Krippendorff's alpha   {_fmt(report['krippendorff_alpha'])} ({report['alpha_level']})")
    for note in report["notes"]:
        lines.append(f"note: {note}")
    lines += ["", "confusion matrix (rows A, columns B): count (row share)"]
    labels = [str(label) for label in report["labels"]]
    rows = [
        [f"A={label}"] + [f"{count} ({share:.2f})" for count, share in zip(counts, shares, strict=True)]
        for label, counts, shares in zip(
            labels, report["confusion_matrix"], report["confusion_row_shares"], strict=True
        )
    ]
    lines += _table([""] + [f"B={label}" for label in labels], rows)
    binary = report.get("binary")
    if "binary" in report:
        lines.append("")
        if binary:
            lines.append(
                f"binary (grade >= {_fmt(binary['threshold'], 1)}): n {binary['n']}, exact {_fmt(binary['exact_agreement'])}, "
                f"kappa {_fmt(binary['cohen_kappa'])}, alpha {_fmt(binary['krippendorff_alpha'])}"
            )
            lines += [f"note: {note}" for note in binary["notes"]]
        else:
            lines.append("binary view: no shared units")
    if report["per_topic"]:
        lines += ["", "per topic"]
        rows = [
            [t["topic"], str(t["n"]), _fmt(t["exact_agreement"]), _fmt(t["cohen_kappa"])]
            for t in report["per_topic"]
        ]
        lines += _table(["topic", "n", "exact", "kappa"], rows)
    return "\n".join(lines) + "\n"


def comparison_csv(report: dict[str, Any]) -> str:
    """One row for all units, then one per topic: n, exact agreement, kappas, alpha, kappa interval."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["task", "judge_a", "judge_b", "topic", *FIGURE_COLUMNS, "kappa_ci95_low", "kappa_ci95_high"]
    )
    a, b = report["judges"]
    ci = report["kappa_ci95"] or [None, None]
    writer.writerow(
        [report["task"], a, b, "all", *(_csv(report[c]) for c in FIGURE_COLUMNS), _csv(ci[0]), _csv(ci[1])]
    )
    for topic in report["per_topic"]:
        writer.writerow(
            [report["task"], a, b, topic["topic"], *(_csv(topic.get(c)) for c in FIGURE_COLUMNS), "", ""]
        )
    return out.getvalue()


def confusion_csv(report: dict[str, Any]) -> str:
    """The confusion matrix: a header of B's labels, one row per label of A, counts."""
    out = io.StringIO()
    writer = csv.writer(out)
    a, b = report["judges"]
    writer.writerow([f"{a} \\ {b}", *report["labels"]])
    for label, counts in zip(report["labels"], report["confusion_matrix"], strict=True):
        writer.writerow([label, *counts])
    return out.getvalue()


def rank_csv(report: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    a, b = report["judges"]
    writer.writerow(["run", f"score_{a}", f"score_{b}", f"rank_{a}", f"rank_{b}"])
    for row in report["runs"]:
        writer.writerow([row["run"], row["score_a"], row["score_b"], row["rank_a"], row["rank_b"]])
    return out.getvalue()


def rank_text(report: dict[str, Any]) -> str:
    a, b = report["judges"]
    lines = [
        f"{report['measure']} on collection {report['collection']}: runs ranked under A = {a} and B = {b}",
        f"runs scored under both: {report['n_runs']}",
        f"Kendall's tau-b   {_fmt(report['kendall_tau_b'])}  (p {_fmt(report['kendall_p'], 4)})",
        f"Spearman's rho    {_fmt(report['spearman_rho'])}  (p {_fmt(report['spearman_p'], 4)})",
    ]
    lines += [f"note: {note}" for note in report["notes"]]
    if report["only_a"] or report["only_b"]:
        lines.append(
            f"scored under A only: {', '.join(report['only_a']) or '-'}; under B only: {', '.join(report['only_b']) or '-'}"
        )
    if report["runs"]:
        lines.append("")
        rows = [
            [r["run"], _fmt(r["score_a"], 4), _fmt(r["score_b"], 4), str(r["rank_a"]), str(r["rank_b"])]
            for r in report["runs"]
        ]
        lines += _table(["run", "score A", "score B", "rank A", "rank B"], rows)
    return "\n".join(lines) + "\n"


def _csv(value: Any) -> str:
    return "" if value is None else str(value)


# --- Charts ----------------------------------------------------------------------------------------


def _render(figure: Figure, fmt: ImageFormat) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(figure)
    figure.savefig(buffer, format=fmt, bbox_inches="tight", dpi=150 if fmt == "png" else 72)
    return buffer.getvalue()


def confusion_heatmap(report: dict[str, Any], fmt: ImageFormat = "svg") -> bytes:
    """The confusion matrix as a heatmap of row shares, each cell annotated with its count."""
    shares = np.array(report["confusion_row_shares"], dtype=float)
    counts = report["confusion_matrix"]
    labels = [str(label) for label in report["labels"]]
    k = len(labels)
    figure = Figure(figsize=(1.2 + 0.9 * k, 1.0 + 0.8 * k))
    axes = figure.add_subplot()
    image = axes.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
    for i in range(k):
        for j in range(k):
            axes.text(
                j,
                i,
                f"{counts[i][j]}\n{shares[i, j]:.0%}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if shares[i, j] > 0.6 else "black",
            )
    axes.set_xticks(range(k), labels)
    axes.set_yticks(range(k), labels)
    a, b = report["judges"]
    axes.set_ylabel(f"A: {a}")
    axes.set_xlabel(f"B: {b}")
    axes.set_title(f"{report['task']}: n={report['n']}", fontsize=10)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="row share")
    return _render(figure, fmt)


def ranking_scatter(report: dict[str, Any], fmt: ImageFormat = "svg") -> bytes:
    """Run scores under judge A (x) against judge B (y), with the diagonal and the correlations."""
    figure = Figure(figsize=(5, 5))
    axes = figure.add_subplot()
    xs = [row["score_a"] for row in report["runs"]]
    ys = [row["score_b"] for row in report["runs"]]
    axes.scatter(xs, ys, s=18, color="#1f5fa8")
    if xs:
        low, high = min(xs + ys), max(xs + ys)
        pad = (high - low) * 0.05 or 0.05
        axes.plot(
            [low - pad, high + pad], [low - pad, high + pad], color="#999", linewidth=0.8, linestyle="--"
        )
    a, b = report["judges"]
    axes.set_xlabel(f"{report['measure']} under {a}")
    axes.set_ylabel(f"{report['measure']} under {b}")
    axes.set_title(
        f"tau-b {_fmt(report['kendall_tau_b'])}, rho {_fmt(report['spearman_rho'])}, {report['n_runs']} runs",
        fontsize=10,
    )
    return _render(figure, fmt)


def data_uri(image: bytes, fmt: ImageFormat = "svg") -> str:
    """A chart as a data: URI, for self-contained HTML reports (an <img>, so the SVG never joins the page DOM)."""
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"


# --- Campaign report -------------------------------------------------------------------------------

HUMAN_KINDS = {Judge.Kind.ASSESSOR, Judge.Kind.CROWD, Judge.Kind.IMPORTED}


def _pair_order(judges: list[Judge]) -> list[tuple[Judge, Judge]]:
    """Every pair once, people (and imported human files) as A and machines as B where they differ."""
    pairs = []
    for first, second in combinations(judges, 2):
        if first.kind not in HUMAN_KINDS and second.kind in HUMAN_KINDS:
            first, second = second, first
        pairs.append((first, second))
    return pairs


def _section(
    *,
    collection: Collection,
    title: str,
    task: str,
    condition: str | None = None,
    binary_threshold: float | None = None,
    measure: str | None = None,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    judges = list(judges_with_labels(collection=collection, task=task, condition=condition))
    if condition:
        # The machine side of a per-condition comparison labels in its own condition.
        judges += [
            j
            for j in judges_with_labels(collection=collection, task=task)
            if j.kind not in HUMAN_KINDS and j not in judges
        ]
    by_judge = (
        labels_by_judge(collection=collection, task=task, judges=judges, condition=condition)
        if judges
        else {}
    )
    scores = {}
    if measure:
        scores = {
            judge.id: run_scores(collection=collection, measure=measure, judge=judge) for judge in judges
        }
    rows = []
    for judge_a, judge_b in _pair_order(judges):
        pairs = pairs_from_labels(task, by_judge[judge_a.id], by_judge[judge_b.id])
        if pairs.n == 0:
            continue
        if binary_threshold is not None:
            pairs = binarise(pairs, binary_threshold)
            figures = label_agreement(
                pairs, ordinal=False, alpha_level="nominal", resamples=resamples, seed=seed
            )
        else:
            figures = _agreement(pairs, task, resamples=resamples, seed=seed)
        row = {"judges": [judge_a.name, judge_b.name], "judge_ids": [judge_a.id, judge_b.id], **figures}
        if measure:
            ranking = rank_agreement(scores_a=scores[judge_a.id], scores_b=scores[judge_b.id])
            row["rank"] = {k: ranking[k] for k in ("n_runs", "kendall_tau_b", "spearman_rho")}
        rows.append(row)
    spec = TASKS[task]
    return {
        "title": title,
        "task": task,
        "condition": condition,
        "binary_threshold": binary_threshold,
        "measure": measure,
        "ordinal": spec.ordinal and binary_threshold is None,
        "rows": rows,
    }


def campaign_report(
    *, collection: Collection, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """Agreement of every pair of judges on every task of a collection, in the layout of the papers:
    relevance (graded and binary at grade 2, with nDCG@5 rank correlation), PTKB, nuggets (NtN), crowd
    NtR, and support per human condition (with weighted-precision rank correlation)."""
    sections = [
        _section(
            collection=collection,
            title="Passage relevance (0-4)",
            task="relevance",
            measure="ndcg@5",
            resamples=resamples,
            seed=seed,
        ),
        _section(
            collection=collection,
            title="Passage relevance, binary (grade >= 2)",
            task="relevance",
            binary_threshold=2,
            resamples=resamples,
            seed=seed,
        ),
        _section(
            collection=collection,
            title="PTKB statement relevance",
            task="ptkb",
            resamples=resamples,
            seed=seed,
        ),
        _section(
            collection=collection, title="Nugget matching (NtN)", task="ntn", resamples=resamples, seed=seed
        ),
        _section(
            collection=collection,
            title="Crowd nugget-to-response (NtR)",
            task="ntr",
            resamples=resamples,
            seed=seed,
        ),
    ]
    human_conditions = [
        c
        for c in SupportJudgment.Condition
        if c not in {SupportJudgment.Condition.MACHINE, SupportJudgment.Condition.IMPORTED}
    ]
    present = set(
        SupportJudgment.objects.filter(sentence__response__run__collection=collection)
        .values_list("condition", flat=True)
        .distinct()
    )
    for condition in human_conditions:
        if condition.value in present:
            sections.append(
                _section(
                    collection=collection,
                    title=f"Support: {condition.label}",
                    task="support",
                    condition=condition.value,
                    measure="support-weighted-precision",
                    resamples=resamples,
                    seed=seed,
                )
            )
    if not any(c.value in present for c in human_conditions):
        sections.append(
            _section(
                collection=collection,
                title="Support",
                task="support",
                measure="support-weighted-precision",
                resamples=resamples,
                seed=seed,
            )
        )
    return {"collection": collection.name, "generated_at": timezone.now().isoformat(), "sections": sections}


# --- Live view -------------------------------------------------------------------------------------


def _quick(pairs_list: list[Pairs], k: int) -> dict[str, Any]:
    """n, exact agreement and kappa of pooled pairs (no bootstrap: the live view is polled)."""
    confusion = sum((confusion_matrix(p.a, p.b, k) for p in pairs_list), np.zeros((k, k), dtype=np.int64))
    n = int(confusion.sum())
    kappa = kappa_from_confusion(confusion, disagreement_weights(k, "none")) if n else np.nan
    return {
        "n": n,
        "exact_agreement": float(np.trace(confusion) / n) if n else None,
        "cohen_kappa": float(kappa) if np.isfinite(kappa) else None,
    }


def live_agreement(*, collection: Collection, task: str = "relevance") -> dict[str, Any]:
    """For each assessor so far: labels given, agreement with each LLM judge, and with the other
    assessors pooled over the units they share. Cheap enough to poll every few seconds."""
    spec = task_spec(task)
    judges = list(judges_with_labels(collection=collection, task=task))
    assessors = [j for j in judges if j.kind == Judge.Kind.ASSESSOR]
    machines = [j for j in judges if j.kind == Judge.Kind.LLM]
    by_judge = labels_by_judge(collection=collection, task=task, judges=judges) if judges else {}
    k = len(spec.labels)
    rows = []
    for assessor in assessors:
        mine = by_judge[assessor.id]
        others = [pairs_from_labels(task, mine, by_judge[o.id]) for o in assessors if o.id != assessor.id]
        rows.append(
            {
                "judge": assessor.name,
                "judge_id": assessor.id,
                "labels": len(mine),
                "llm": [
                    {
                        "judge": m.name,
                        "judge_id": m.id,
                        **_quick([pairs_from_labels(task, mine, by_judge[m.id])], k),
                    }
                    for m in machines
                ],
                "assessors": _quick(others, k),
            }
        )
    return {
        "collection": collection.name,
        "task": task,
        "llm_judges": [m.name for m in machines],
        "assessors": rows,
        "updated_at": timezone.now().isoformat(),
    }


def measures_for_task(task: str) -> list[str]:
    return [name for name, (measure_task, _f) in RUN_MEASURES.items() if measure_task == task]


def confusion_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The confusion matrix shaped for templates: one row per label of A, cells with count and row share."""
    return [
        {
            "label": label,
            "cells": [{"count": c, "share": s} for c, s in zip(counts, shares, strict=True)],
            "total": sum(counts),
        }
        for label, counts, shares in zip(
            report["labels"], report["confusion_matrix"], report["confusion_row_shares"], strict=True
        )
    ]
