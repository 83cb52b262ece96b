"""The live views' line charts (cube_lab/sdk/charts.py): where the points land, what is left
out, how many charts and points a view carries."""

from __future__ import annotations

import math
import re

from cube_lab.sdk import charts


def points_of(svg: str) -> list[tuple[float, float]]:
    (line,) = re.findall(r"points='([^']*)'", svg)
    return [tuple(map(float, p.split(","))) for p in line.split()]  # type: ignore[misc]


def test_a_falling_loss_goes_from_the_top_left_to_the_bottom_right() -> None:
    svg = charts.line_svg([(0, 4.0), (1, 3.0), (2, 2.0), (3, 1.0)], "loss")
    pts = points_of(svg)
    assert pts[0] == (charts.PAD, charts.PAD)
    assert pts[-1] == (charts.WIDTH - charts.PAD, charts.HEIGHT - charts.PAD)
    assert "<b>loss</b> 1 " in svg and "[1, 4]" in svg
    assert f"cx='{charts.WIDTH - charts.PAD:.1f}'" in svg  # the dot on the last value


def test_a_flat_series_and_non_finite_values_draw_without_error() -> None:
    flat = points_of(charts.line_svg([(0, 2.0), (5, 2.0)], "acc"))
    assert [y for _, y in flat] == [charts.HEIGHT - charts.PAD] * 2
    kept = points_of(charts.line_svg([(0, 1.0), (1, math.nan), (2, math.inf), (3, 0.5)], "x"))
    assert len(kept) == 2
    assert charts.line_svg([], "empty") == "" and charts.line_svg([(0, math.nan)], "n") == ""


def test_long_series_are_thinned_keeping_both_ends() -> None:
    series = [(float(i), float(i % 7)) for i in range(10_000)]
    thinned = charts.thin(series)
    assert len(thinned) == charts.MAX_POINTS
    assert thinned[0] == series[0] and thinned[-1] == series[-1]
    assert thinned == sorted(thinned)


def test_names_are_escaped_and_charts_capped() -> None:
    svg = charts.charts_html({"<b>": [(0, 1.0), (1, 2.0)]})
    assert "&lt;b&gt;" in svg and "<b><b>" not in svg
    many = charts.charts_html({f"m{i}": [(0, 1.0), (1, float(i))] for i in range(10)})
    assert many.count("<svg") == charts.MAX_CHARTS
    assert charts.charts_html({"none": []}) == ""
