"""Small line charts for the live views: inline SVG, no plotting library, theme colours.

``charts_html({"loss": [(0, 2.3), (1, 1.9), ...], ...})`` gives one chart per series, side by
side: the line over the steps, the last value and the range [lowest, highest]. A series keeps
at most ``MAX_POINTS`` points (evenly picked, the last always kept): a long job's view stays
light.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

WIDTH, HEIGHT, PAD = 220, 56, 4
MAX_POINTS = 200
MAX_CHARTS = 6
Point = tuple[float, float]


def thin(points: Sequence[Point], most: int = MAX_POINTS) -> list[Point]:
    """At most ``most`` of ``points``, evenly spread, the first and the last kept."""
    finite = [(float(x), float(y)) for x, y in points if math.isfinite(y) and math.isfinite(x)]
    if len(finite) <= most:
        return finite
    step = (len(finite) - 1) / (most - 1)
    return [finite[round(i * step)] for i in range(most)]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def line_svg(points: Sequence[Point], label: str) -> str:
    """One chart: ``label``, the line, the last value and the range; "" without points."""
    shown = thin(points)
    if not shown:
        return ""
    xs, ys = [p[0] for p in shown], [p[1] for p in shown]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    spread_x, spread_y = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def at(x: float, y: float) -> tuple[float, float]:
        return PAD + (x - x0) / spread_x * inner_w, PAD + inner_h - (y - y0) / spread_y * inner_h

    line = " ".join("{:.1f},{:.1f}".format(*at(x, y)) for x, y in shown)
    last_y = shown[-1][1]
    cx, cy = at(*shown[-1])
    name = html.escape(label)
    return (
        "<div style='display:inline-block;margin:2px 12px 2px 0;vertical-align:top'>"
        f"<div style='font-size:var(--jp-ui-font-size0, 11px)'><b>{name}</b> {_fmt(last_y)}"
        f" <span style='opacity:0.7'>[{_fmt(y0)}, {_fmt(y1)}]</span></div>"
        f"<svg width='{WIDTH}' height='{HEIGHT}' role='img' aria-label='{name}' "
        "style='border:1px solid var(--jp-border-color2, #ddd)'>"
        f"<polyline fill='none' stroke='var(--jp-brand-color1, #1976d2)' stroke-width='1.5' "
        f"points='{line}'/>"
        f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='2.5' fill='var(--jp-brand-color1, #1976d2)'/>"
        "</svg></div>"
    )


def charts_html(series: dict[str, Sequence[Point]]) -> str:
    """The charts of the first ``MAX_CHARTS`` series (by name) that have points."""
    charts = [line_svg(points, name) for name, points in sorted(series.items())]
    return "".join([c for c in charts if c][:MAX_CHARTS])
