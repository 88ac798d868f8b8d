"""Charts: matplotlib's object API with the Agg canvas (no pyplot state), so pages can draw them in any
thread."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from judging.agreement.reports.text import format_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ImageFormat = Literal["svg", "png"]
RUN_LABEL_CHARS = 28

# --- Charts ----------------------------------------------------------------------------------------


def _figure(**kwargs: Any) -> Figure:
    # matplotlib takes about a third of a second to import: only a process that draws a chart pays for it.
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _render(figure: Figure, fmt: ImageFormat) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

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
    figure = _figure(figsize=(1.2 + 0.9 * k, 1.0 + 0.8 * k))
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
    axes.set_ylabel(f"A: {a}", parse_math=False)
    axes.set_xlabel(f"B: {b}", parse_math=False)
    axes.set_title(f"{report['task']}: n={report['n']}", fontsize=10)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="row share")
    return _render(figure, fmt)


def _short(name: str) -> str:
    return name if len(name) <= RUN_LABEL_CHARS else name[: RUN_LABEL_CHARS - 1] + "…"


def scatter_labels(runs: list[dict[str, Any]]) -> list[tuple[float, float, str, int]]:
    """(x, y, text, vertical offset in points) of one label per distinct point of the scatter.

    Runs on the same point (equal scores to the four places the table shows) share one label, the first
    name and how many more, instead of printing their names on top of each other; a label whose point lies
    close to an earlier labelled point is moved up a line so the two stay readable.
    """
    groups: dict[tuple[float, float], list[str]] = {}
    for row in runs:
        groups.setdefault((round(row["score_a"], 4), round(row["score_b"], 4)), []).append(str(row["run"]))
    if not groups:
        return []
    xs = [x for x, _y in groups]
    ys = [y for _x, y in groups]
    near_x = (max(xs) - min(xs)) * 0.04 or 0.01
    near_y = (max(ys) - min(ys)) * 0.03 or 0.01
    placed: list[tuple[float, float, int]] = []
    labels = []
    for (x, y), names in sorted(groups.items()):
        names = sorted(names)
        text = _short(names[0]) if len(names) == 1 else f"{_short(names[0])} + {len(names) - 1} more"
        taken = {line for px, py, line in placed if abs(px - x) <= near_x and abs(py - y) <= near_y}
        line = next(i for i in range(len(placed) + 1) if i not in taken)
        placed.append((x, y, line))
        labels.append((x, y, text, 3 + 8 * line))
    return labels


def ranking_scatter(report: dict[str, Any], fmt: ImageFormat = "svg") -> bytes:
    """Run scores under judge A (x) against judge B (y), with the diagonal and the correlations."""
    figure = _figure(figsize=(5, 5))
    axes = figure.add_subplot()
    xs = [row["score_a"] for row in report["runs"]]
    ys = [row["score_b"] for row in report["runs"]]
    axes.scatter(xs, ys, s=18, color="#1f5fa8")
    # Each point named by its run (the table beside the chart has the full names); parse_math off, since
    # a run name may hold "$".
    for x, y, text, offset in scatter_labels(report["runs"]):
        axes.annotate(
            text,
            (x, y),
            xytext=(4, offset),
            textcoords="offset points",
            fontsize=7,
            color="#333",
            parse_math=False,
        )
    if xs:
        low, high = min(xs + ys), max(xs + ys)
        pad = (high - low) * 0.05 or 0.05
        axes.plot(
            [low - pad, high + pad], [low - pad, high + pad], color="#999", linewidth=0.8, linestyle="--"
        )
    a, b = report["judges"]
    axes.set_xlabel(f"{report['measure']} under {a}", parse_math=False)
    axes.set_ylabel(f"{report['measure']} under {b}", parse_math=False)
    left_out = len(report.get("left_out", []))
    axes.set_title(
        f"tau-b {format_figure(report['kendall_tau_b'])}, rho {format_figure(report['spearman_rho'])}, {report['n_runs']} runs"
        + (f" ({left_out} left out)" if left_out else ""),
        fontsize=10,
    )
    return _render(figure, fmt)


def data_uri(image: bytes, fmt: ImageFormat = "svg") -> str:
    """A chart as a data: URI, for self-contained HTML reports (an <img>, so the SVG never joins the page DOM)."""
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"
