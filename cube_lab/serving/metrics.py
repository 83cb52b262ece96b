"""Per-deployment request metrics in the Prometheus text format (version 0.0.4).

Written by hand rather than with prometheus_client: the router counts one request in a few
dictionary operations, with no locks (it is single-threaded), and renders on scrape.
"""

from __future__ import annotations

import bisect

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Histogram:
    __slots__ = ("counts", "sum", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last one is +Inf
        self.total = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.total += 1
        self.sum += seconds


class Metrics:
    def __init__(self, deployment: str) -> None:
        self.deployment = _label(deployment)
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.shadow_requests: dict[tuple[str, int], int] = {}
        self.shadow_latency: dict[str, Histogram] = {}
        self.in_flight = 0

    def observe(self, version: str, status: int, seconds: float) -> None:
        key = (version, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        hist = self.latency.get(version)
        if hist is None:
            hist = self.latency[version] = Histogram()
        hist.observe(seconds)

    def observe_shadow(self, version: str, status: int, seconds: float) -> None:
        key = (version, status)
        self.shadow_requests[key] = self.shadow_requests.get(key, 0) + 1
        hist = self.shadow_latency.get(version)
        if hist is None:
            hist = self.shadow_latency[version] = Histogram()
        hist.observe(seconds)

    def render(self) -> str:
        d = self.deployment
        out: list[str] = []
        for prefix, requests, latency, what in (
            ("cube_serving", self.requests, self.latency, "Inference requests"),
            ("cube_serving_shadow", self.shadow_requests, self.shadow_latency, "Mirrored requests"),
        ):
            out += [
                f"# HELP {prefix}_requests_total {what} answered, by version and status code.",
                f"# TYPE {prefix}_requests_total counter",
            ]
            errors: dict[str, int] = {}
            for (version, status), n in sorted(requests.items()):
                v = _label(version)
                out.append(
                    f'{prefix}_requests_total{{deployment="{d}",version="{v}",code="{status}"}} {n}'
                )
                if status >= 400:
                    errors[v] = errors.get(v, 0) + n
            out += [
                f"# HELP {prefix}_request_errors_total {what} answered with a 4xx or 5xx status.",
                f"# TYPE {prefix}_request_errors_total counter",
            ]
            for v, n in sorted(errors.items()):
                out.append(f'{prefix}_request_errors_total{{deployment="{d}",version="{v}"}} {n}')
            name = f"{prefix}_request_duration_seconds"
            out += [
                f"# HELP {name} Time from a request's arrival to its answer.",
                f"# TYPE {name} histogram",
            ]
            for version, hist in sorted(latency.items()):
                labels = f'deployment="{d}",version="{_label(version)}"'
                running = 0
                for bound, count in zip((*BUCKETS, "+Inf"), hist.counts, strict=True):
                    running += count
                    out.append(f'{name}_bucket{{{labels},le="{bound}"}} {running}')
                out.append(f"{name}_sum{{{labels}}} {hist.sum:.6f}")
                out.append(f"{name}_count{{{labels}}} {hist.total}")
        out += [
            "# HELP cube_serving_in_flight Requests being answered now.",
            "# TYPE cube_serving_in_flight gauge",
            f'cube_serving_in_flight{{deployment="{d}"}} {self.in_flight}',
        ]
        return "\n".join(out) + "\n"
