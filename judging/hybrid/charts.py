"""Geometry of the server-rendered SVG charts: numbers only, so the template escapes every label."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

WIDTH, ROW, LEFT, RIGHT = 640, 22, 180, 20
LABEL_CHARS = 28


def fixed(value: float, places: int = 4) -> str:
    """A figure with `places` decimals as the `floatformat` filter writes it in English (its decimal
    rounding of the shortest repr, half up; no sign on a zero; non-finite figures as "nan", "inf"), at a
    fraction of its cost: a page of runs writes several per run."""
    if not math.isfinite(value):
        return str(value)
    text = f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP):f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _short(label: str) -> str:
    """The `truncatechars` filter's cut: at most LABEL_CHARS characters, the last an ellipsis."""
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def error_bars(rows: list[tuple[str, float, float, float]]) -> dict[str, Any]:
    """One horizontal bar per (label, estimate, lo, hi), on a shared axis with a few ticks; each row's
    figures written out here (`figures`), its label shortened (`short`), for the template to escape."""
    if not rows:
        return {"rows": [], "height": 0, "ticks": [], "width": WIDTH, "left": LEFT, "label_x": LEFT - 6}
    lo = min(r[2] for r in rows)
    hi = max(r[3] for r in rows)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    span = WIDTH - LEFT - RIGHT

    def x(v: float) -> float:
        return round(LEFT + (v - lo) / (hi - lo) * span, 2)

    out = [
        {
            "label": label,
            "short": _short(label),
            "figures": f"{fixed(est)} [{fixed(a)}, {fixed(b)}]",
            "y": 20 + i * ROW,
            "label_y": 24 + i * ROW,
            "x": x(est),
            "x_lo": x(a),
            "x_hi": x(b),
            "estimate": est,
            "lo": a,
            "hi": b,
        }
        for i, (label, est, a, b) in enumerate(rows)
    ]
    step = _nice_step((hi - lo) / 5)
    first = math.ceil(lo / step) * step
    ticks = []
    value = first
    while value <= hi:
        ticks.append({"x": x(value), "label": f"{value:.3g}"})
        value += step
    return {
        "rows": out,
        "height": 30 + len(rows) * ROW,
        "ticks": ticks,
        "width": WIDTH,
        "axis_y": 10 + len(rows) * ROW,
        "left": LEFT,
        "label_x": LEFT - 6,
    }


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def lines(
    series: dict[str, list[tuple[float, float]]],
    *,
    y_min: float,
    y_max: float,
    marks: tuple[float, ...] = (),
    height: int = 220,
) -> dict[str, Any]:
    """Polylines of (budget, value) per method on a log-budget axis from y_min to y_max, the axis widened to
    every finite value: a point drawn at the edge for a value beyond it would read as a value it is not."""
    xs = sorted({p[0] for pts in series.values() for p in pts})
    if not xs:
        return {"series": [], "width": WIDTH, "height": height, "xticks": [], "yticks": []}
    values = [v for pts in series.values() for _b, v in pts if math.isfinite(v)]
    y_min, y_max = min([y_min, *values]), max([y_max, *values])
    if y_max <= y_min:
        y_max = y_min + 1.0
    left, right, top, bottom = 60, 120, 10, height - 30
    lx = [math.log(v) for v in xs]
    x0, x1 = min(lx), max(lx) if max(lx) > min(lx) else min(lx) + 1

    def px(v: float) -> float:
        return round(left + (math.log(v) - x0) / (x1 - x0) * (WIDTH - left - right), 2)

    def py(v: float) -> float:
        return round(bottom - (v - y_min) / (y_max - y_min) * (bottom - top), 2)

    palette = ["#555", "#1f77b4", "#2ca02c", "#d62728", "#9467bd"]
    out = []
    for i, (name, pts) in enumerate(series.items()):
        out.append(
            {
                "name": name,
                "color": palette[i % len(palette)],
                "points": " ".join(f"{px(b)},{py(v)}" for b, v in pts if math.isfinite(v)),
                "legend_y": top + 14 * i + 8,
            }
        )
    yticks = [
        {"y": py(y_min + k * (y_max - y_min) / 4), "label": f"{y_min + k * (y_max - y_min) / 4:.3g}"}
        for k in range(5)
    ]
    return {
        "series": out,
        "width": WIDTH,
        "height": height,
        "xticks": [{"x": px(b), "label": str(int(b))} for b in xs],
        "yticks": yticks,
        "left": left,
        "bottom": bottom,
        "top": top,
        "legend_x": WIDTH - right + 10,
        "right": WIDTH - right,
        "marks": [{"y": py(m), "label": f"{m:g}"} for m in marks],
    }
