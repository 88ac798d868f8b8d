"""Reports as text and CSV."""

from __future__ import annotations

import io
from typing import Any

from django.template.defaultfilters import pluralize

from core.csv_safe import csv_writer
from core.wording import plural
from judging.agreement.reports.comparison import FIGURE_COLUMNS

# --- Text and CSV ----------------------------------------------------------------------------------


def format_figure(value: object, digits: int = 3) -> str:
    """A figure as reports print it: `digits` decimals, "n/a" for none."""
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
        f"exact agreement        {format_figure(report['exact_agreement'])}",
        f"Cohen's kappa          {format_figure(report['cohen_kappa'])}"
        + (
            f"  (95% CI {format_figure(report['kappa_ci95'][0])} to {format_figure(report['kappa_ci95'][1])}, "
            f"bootstrap over {report['bootstrap']['topics']} topic{pluralize(report['bootstrap']['topics'])}, "
            f"{report['bootstrap']['resamples']} resamples)"
            if report["kappa_ci95"]
            else ""
        ),
    ]
    if report["weighted_kappa_linear"] is not None or report["weighted_kappa_quadratic"] is not None:
        lines.append(f"weighted kappa linear  {format_figure(report['weighted_kappa_linear'])}")
        lines.append(f"weighted kappa quadr.  {format_figure(report['weighted_kappa_quadratic'])}")
    lines.append(
        f"Krippendorff's alpha   {format_figure(report['krippendorff_alpha'])} ({report['alpha_level']})"
    )
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
                f"binary (grade >= {format_figure(binary['threshold'], 1)}): n {binary['n']}, exact {format_figure(binary['exact_agreement'])}, "
                f"kappa {format_figure(binary['cohen_kappa'])}, alpha {format_figure(binary['krippendorff_alpha'])}"
            )
            lines += [f"note: {note}" for note in binary["notes"]]
        else:
            lines.append("binary view: no shared units")
    if report["per_topic"]:
        lines += ["", "per topic"]
        rows = [
            [t["topic"], str(t["n"]), format_figure(t["exact_agreement"]), format_figure(t["cohen_kappa"])]
            for t in report["per_topic"]
        ]
        lines += _table(["topic", "n", "exact", "kappa"], rows)
    return "\n".join(lines) + "\n"


def comparison_csv(report: dict[str, Any]) -> str:
    """One row for all units, then one per topic: n, exact agreement, kappas, alpha, kappa interval."""
    out = io.StringIO()
    writer = csv_writer(out)
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
    writer = csv_writer(out)
    a, b = report["judges"]
    writer.writerow([f"{a} \\ {b}", *report["labels"]])
    for label, counts in zip(report["labels"], report["confusion_matrix"], strict=True):
        writer.writerow([label, *counts])
    return out.getvalue()


def rank_csv(report: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv_writer(out)
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
        f"Kendall's tau-b   {format_figure(report['kendall_tau_b'])}  (p {format_figure(report['kendall_p'], 4)})",
        f"Spearman's rho    {format_figure(report['spearman_rho'])}  (p {format_figure(report['spearman_p'], 4)})",
    ]
    if ci := report.get("kendall_tau_ci"):
        lines.insert(
            -1,
            f"  95% interval    [{format_figure(ci['ci'][0])}, {format_figure(ci['ci'][1])}]  ({ci['interval']}: "
            f"{plural(ci['turns'], 'turn')}, {ci['draws']} draws; coverage {ci['coverage']})",
        )
    lines += [f"note: {note}" for note in report["notes"]]
    if report["only_a"] or report["only_b"]:
        lines.append(
            f"scored under A only: {', '.join(report['only_a']) or '-'}; under B only: {', '.join(report['only_b']) or '-'}"
        )
    if report["runs"]:
        lines.append("")
        rows = [
            [
                r["run"],
                format_figure(r["score_a"], 4),
                format_figure(r["score_b"], 4),
                str(r["rank_a"]),
                str(r["rank_b"]),
            ]
            for r in report["runs"]
        ]
        lines += _table(["run", "score A", "score B", "rank A", "rank B"], rows)
    return "\n".join(lines) + "\n"


def _csv(value: object) -> str:
    return "" if value is None else str(value)
