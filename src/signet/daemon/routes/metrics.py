"""``GET /metrics``: the daemon's counters in the Prometheus text format.

Read when scraped, from the objects that keep them (the connection guard, the keyword mirror,
the response counter, the embedder's queue): nothing is counted twice and nothing here runs
between scrapes. Needs ``diagnostics`` like ``/api/status``; a scraper sends a token."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from signet.daemon.connections import GuardedProtocol
from signet.daemon.deps import RuntimeDep
from signet.daemon.idle import IdleTrim
from signet.daemon.metrics_analytics import analytics_metrics
from signet.runtime import Runtime

router = APIRouter(tags=["status"])

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class SignetCollector(Collector):
    """Every Signet figure, read at scrape time."""

    def __init__(self, runtime: Runtime, responses: dict[str, int], idle: IdleTrim) -> None:
        self.runtime = runtime
        self.responses = responses
        self.idle = idle

    def collect(self) -> Iterator[Metric]:
        c = GuardedProtocol.counts
        for name, value, doc in (
            ("connections_opened", c.opened, "connections accepted"),
            ("connections_evicted", c.evicted, "idle connections closed to make room over the cap"),
            ("connections_refused", c.refused, "connections or requests refused with 503 (all busy)"),
            ("header_timeouts", c.header_timeouts, "connections closed: headers not sent in time"),
            ("body_timeouts", c.body_timeouts, "connections closed: body not sent in time"),
            ("headers_too_large", c.headers_too_large, "requests refused with 431"),
        ):
            yield CounterMetricFamily(f"signet_{name}", doc, value=value)
        yield GaugeMetricFamily("signet_connections_open", "client connections open now", value=c.open)
        http = CounterMetricFamily("signet_http_responses", "responses sent, by status class", labels=["class"])
        for klass, n in sorted(self.responses.items()):
            if klass != "work":
                http.add_metric([klass], n)
        yield http
        yield CounterMetricFamily("signet_idle_trims", "times idle memory was given back", value=self.idle.trims)
        yield CounterMetricFamily("signet_idle_trimmed_megabytes", "RSS given back when idle", value=self.idle.freed_mb)

        mirror = self.runtime.keywords
        if mirror is not None:
            yield GaugeMetricFamily(
                "signet_keyword_index_ready",
                "1 when the in-memory keyword index answers",
                value=1 if mirror.ready else 0,
            )
            yield GaugeMetricFamily(
                "signet_keyword_index_rows", "rows in the in-memory keyword index", value=len(mirror.index)
            )
            yield CounterMetricFamily(
                "signet_keyword_index_rebuilds", "whole rebuilds after the first build", value=mirror.rebuilds
            )
            yield CounterMetricFamily(
                "signet_keyword_index_answered", "keyword searches the index answered", value=mirror.answered
            )
            fb = CounterMetricFamily(
                "signet_keyword_index_fallbacks", "keyword searches handed to FTS5, by reason", labels=["reason"]
            )
            for reason, n in mirror.fallback_reasons.items():
                fb.add_metric([reason], n)
            yield fb
        yield GaugeMetricFamily(
            "signet_vectors", "embeddings in the in-memory vector index", value=len(self.runtime.index)
        )
        yield from analytics_metrics(self.runtime.observability.analytics)  # latency, usage, errors


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}, "description": "Prometheus text format"}
    },
)
def metrics(request: Request, runtime: RuntimeDep) -> Response:
    """Connections (open, evicted, timed out, refused), responses by status class, the keyword
    index (rebuilds, answered, fallbacks by reason), vectors, the analytics (latency histograms
    per operation and route, request errors, actors, provider calls, errors by code), and the
    process (RSS, CPU, open files) as Prometheus reads them."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SignetCollector(runtime, request.app.state.responses, request.app.state.idle))
    registry.register(ProcessCollector(registry=None))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE)
