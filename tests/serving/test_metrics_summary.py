"""Reading a deployment's Prometheus text back into the figures its live view shows."""

from __future__ import annotations

import math

import pytest

from cube_lab.serving.metrics import BUCKETS, Metrics
from cube_lab.serving.metrics_summary import quantile, summary


def test_the_summary_counts_requests_errors_and_latency_of_every_version() -> None:
    metrics = Metrics("iris")
    for _ in range(90):
        metrics.observe("1", 200, 0.004)  # in the (0.0025, 0.005] bucket
    for _ in range(10):
        metrics.observe("2", 500, 0.2)  # in the (0.1, 0.25] bucket
    metrics.observe_shadow("3", 200, 9.0)  # mirrored: not the deployment's traffic
    metrics.in_flight = 2
    got = summary(metrics.render())
    assert (got["requests"], got["errors"], got["in_flight"]) == (100, 10, 2)
    assert got["mean_ms"] == pytest.approx((90 * 4 + 10 * 200) / 100, abs=1e-3)
    # histogram_quantile: linear inside the bucket that holds the rank
    assert got["p50_ms"] == pytest.approx(2.5 + 2.5 * 50 / 90, abs=1e-3)
    assert got["p95_ms"] == pytest.approx(100 + 150 * 5 / 10, abs=1e-3)


def test_no_requests_yet_gives_no_latency() -> None:
    got = summary(Metrics("iris").render())
    assert got == {
        "requests": 0,
        "errors": 0,
        "mean_ms": None,
        "p50_ms": None,
        "p95_ms": None,
        "in_flight": 0,
    }


def test_a_quantile_past_the_highest_bound_is_that_bound() -> None:
    top = BUCKETS[-1]
    buckets = [(b, 0.0) for b in BUCKETS] + [(math.inf, 4.0)]
    assert quantile(0.5, buckets) == top
    assert quantile(0.5, []) is None
