"""A deployment's request metrics, read back from its Prometheus text (``metrics.py``).

``summary(text)`` gives the totals a person looks at: requests answered, errors, the mean
latency and the 50th / 95th percentiles (estimated from the histogram's buckets the way
Prometheus' ``histogram_quantile`` does: linearly inside the bucket), and requests in flight.
Shadow (mirrored) requests are not counted: they are not the deployment's traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

PREFIX = "cube_serving"


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """The ``q`` quantile of a histogram given as sorted (upper bound, cumulative count)
    pairs, the last one ``+Inf``; None when it counted nothing."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):  # above the highest finite bound: say that bound
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = bound, count
    return lower


@dataclass(frozen=True)
class Totals:
    """The router's counters as they stand: they only grow while the router lives."""

    requests: float = 0.0
    errors: float = 0.0
    duration_s: float = 0.0  # the sum of the requests' latencies
    count: float = 0.0  # requests the latency histogram counted
    in_flight: float = 0.0
    buckets: tuple[tuple[float, float], ...] = ()  # sorted (upper bound, cumulative count)

    def since(self, before: Totals) -> Totals | None:
        """What came between ``before`` and this reading (None when a counter went back:
        the router restarted, so the difference means nothing)."""
        if self.requests < before.requests or self.count < before.count:
            return None
        old = dict(before.buckets)
        return Totals(
            self.requests - before.requests,
            self.errors - before.errors,
            self.duration_s - before.duration_s,
            self.count - before.count,
            self.in_flight,
            tuple((b, c - old.get(b, 0.0)) for b, c in self.buckets),
        )


def totals(text: str) -> Totals:
    """The counters in a router's Prometheus text, over all versions of the deployment."""
    requests = errors = in_flight = 0.0
    total_s = count = 0.0
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name, value = sample.name, sample.value
            if name == f"{PREFIX}_requests_total":
                requests += value
            elif name == f"{PREFIX}_request_errors_total":
                errors += value
            elif name == f"{PREFIX}_request_duration_seconds_bucket":
                bound = float(sample.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + value
            elif name == f"{PREFIX}_request_duration_seconds_sum":
                total_s += value
            elif name == f"{PREFIX}_request_duration_seconds_count":
                count += value
            elif name == f"{PREFIX}_in_flight":
                in_flight += value
    return Totals(requests, errors, total_s, count, in_flight, tuple(sorted(buckets.items())))


def summary(text: str) -> dict[str, Any]:
    """``requests``, ``errors``, ``mean_ms``, ``p50_ms``, ``p95_ms`` (None before any request)
    and ``in_flight``, over all versions of the deployment."""
    t = totals(text)
    ordered = list(t.buckets)

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else round(seconds * 1000, 3)

    return {
        "requests": int(t.requests),
        "errors": int(t.errors),
        "mean_ms": ms(t.duration_s / t.count) if t.count else None,
        "p50_ms": ms(quantile(0.5, ordered)),
        "p95_ms": ms(quantile(0.95, ordered)),
        "in_flight": int(t.in_flight),
    }
