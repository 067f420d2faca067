"""The analytics counters and latency histograms as Prometheus metric families (``/metrics``).

Histograms are cumulative since start in seconds (Prometheus convention), with the buckets of
:data:`signet.ops.analytics.BOUNDS_MS`; the percentiles of ``/api/analytics/latency`` are over
the last samples only and are not exported (Prometheus computes its own from the buckets).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from signet.ops.analytics import BOUNDS_MS, ERROR_CODES, Analytics


def _buckets(per_bucket: list[int]) -> list[tuple[str, float]]:
    out, running = [], 0
    for bound, n in zip((*(str(b / 1000) for b in BOUNDS_MS), "+Inf"), per_bucket, strict=True):
        running += n
        out.append((bound, float(running)))
    return out


def _split(route: str) -> tuple[str, str]:
    method, _, template = route.partition(" ")
    return (method, template) if template else ("", route)


def analytics_metrics(analytics: Analytics) -> Iterator[Metric]:
    hist = analytics.histograms()
    ops = HistogramMetricFamily(
        "signet_operation_duration_seconds",
        "remember/recall/mutate requests, the recall engine (search), embedding and LLM calls, pipeline jobs",
        labels=["operation"],
    )
    for op, (_, total_ms, buckets) in hist["operations"].items():
        ops.add_metric([op], _buckets(buckets), sum_value=total_ms / 1000)
    yield ops
    http = HistogramMetricFamily(
        "signet_http_request_duration_seconds", "time to last byte, by route template", labels=["method", "route"]
    )
    for route, (_, total_ms, buckets) in sorted(hist["routes"].items()):
        http.add_metric(list(_split(route)), _buckets(buckets), sum_value=total_ms / 1000)
    yield http

    usage = analytics.usage()
    errs = CounterMetricFamily(
        "signet_http_request_errors",
        "requests answered with a 4xx or 5xx, by route template",
        labels=["method", "route"],
    )
    for route, e in usage["endpoints"].items():
        errs.add_metric(list(_split(route)), e["errors"])
    yield errs
    actors = CounterMetricFamily(
        "signet_actor_requests",
        "requests by actor (token subject or agent, else local) and kind",
        labels=["actor", "kind"],
    )
    for actor, counts in usage["actors"].items():
        for kind, n in counts.items():
            if kind != "total":
                actors.add_metric([actor, kind], n)
    yield actors
    providers = CounterMetricFamily(
        "signet_provider_calls", "embedding and LLM provider calls, by outcome", labels=["provider", "outcome"]
    )
    for name, p in usage["providers"].items():
        providers.add_metric([name, "success"], p["calls"] - p["failures"] - p["timeouts"])
        providers.add_metric([name, "failure"], p["failures"])
        providers.add_metric([name, "timeout"], p["timeouts"])
    yield providers
    errors = CounterMetricFamily(
        "signet_errors", "errors by stage and code (the error ring's totals)", labels=["stage", "code"]
    )
    totals = analytics.error_totals()
    for code, stage in ERROR_CODES.items():
        errors.add_metric([stage, code], totals.get(code, 0))
    yield errors
