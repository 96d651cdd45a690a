"""The OTLP metrics mcpwatch adds up itself are the ones the OpenTelemetry SDK's instruments gave: one stream of
measurements recorded both ways, cumulative and delta, gives the same data points (attributes, count, sum, buckets,
min, max, values) and the same temporality, push after push."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from hostile_collector import HostileCollector
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Histogram,
    HistogramDataPoint,
    InMemoryMetricReader,
    MetricsData,
    NumberDataPoint,
    Sum,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from test_metrics_agree import two_sessions_each_restarting_once

from mcpwatch.otel import exporter
from mcpwatch.otel.config import OtelTarget
from mcpwatch.otel.exporter import MetricRecorder
from mcpwatch.otel.metric_fold import COUNTERS, LEVELS, MAX_ATTRIBUTE_BYTES, OtlpMetricFold
from mcpwatch.otel.spans import DURATION_BUCKETS, DURATION_METRIC, Measure

URL = "http://127.0.0.1:9/v1/metrics"  # never reached: the tests read what a push would send


class SdkRecorder:
    """The SDK's instruments, as mcpwatch recorded through them before."""

    def __init__(self, temporality: Any) -> None:
        self.reader = InMemoryMetricReader(preferred_temporality=temporality)
        view = View(instrument_name=DURATION_METRIC, aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS))
        self.provider = MeterProvider(metric_readers=[self.reader], views=[view], shutdown_on_exit=False)
        meter = self.provider.get_meter("mcpwatch")
        self.duration = meter.create_histogram(DURATION_METRIC, unit="s")
        self.counters = {name: meter.create_counter(name) for name in COUNTERS}
        self.levels: dict[tuple[str, frozenset[tuple[str, Any]]], float] = {}
        for name in LEVELS:
            meter.create_observable_up_down_counter(name, callbacks=[self._observe(name)])

    def _observe(self, name: str) -> Callable[[CallbackOptions], list[Observation]]:
        def observe(_options: CallbackOptions) -> list[Observation]:
            return [Observation(v, dict(attrs)) for (kind, attrs), v in self.levels.items() if kind == name]

        return observe

    def record(self, measure: Measure) -> None:
        if measure.name == DURATION_METRIC:
            self.duration.record(measure.value, measure.attributes)
        elif measure.name in LEVELS:
            key = (measure.name, frozenset(measure.attributes.items()))
            self.levels[key] = self.levels.get(key, 0) + measure.value
        else:
            self.counters[measure.name].add(measure.value, measure.attributes)

    def data(self) -> MetricsData | None:
        return self.reader.get_metrics_data()


def points(data: MetricsData | None) -> dict[tuple[str, frozenset[tuple[str, Any]]], tuple[Any, ...]]:
    """Every data point by metric and attributes: what a collector reads of it (times aside)."""
    found: dict[tuple[str, frozenset[tuple[str, Any]]], tuple[Any, ...]] = {}
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                assert isinstance(metric.data, Sum | Histogram), metric  # the only kinds mcpwatch makes
                temporality = metric.data.aggregation_temporality
                for p in metric.data.data_points:
                    assert p.attributes is not None  # the SDK gives every point its attributes, maybe none
                    key = (metric.name, frozenset(p.attributes.items()))
                    shape: tuple[Any, ...]
                    if isinstance(p, HistogramDataPoint):
                        shape = (p.count, p.sum, tuple(p.bucket_counts), tuple(p.explicit_bounds), p.min, p.max)
                    else:
                        assert isinstance(p, NumberDataPoint), p
                        shape = (float(p.value), getattr(metric.data, "is_monotonic", None))
                    found[key] = (temporality, *shape)
    return found


def measures() -> list[Measure]:
    from mcpwatch.otel.spans import SpanBuilder

    builder = SpanBuilder()
    events = two_sessions_each_restarting_once()
    found = [out for event in events for out in builder.feed(event) if isinstance(out, Measure)]
    found += [Measure(DURATION_METRIC, value, {"mcp.method.name": "tools/call"}) for value in (0.01, 0.5, 301.0)]
    return found


@pytest.mark.parametrize("preference", ["cumulative", "delta", " LowMemory "])
def test_the_points_are_the_sdk_s_push_after_push(preference: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", preference)
    ours = MetricRecorder(OtelTarget(traces_url=None, metrics_url=URL, metrics_interval_ms=3_600_000), URL, print)
    sdk_exporter = OTLPMetricExporter(endpoint=URL)  # the temporality the SDK's own exporter asks its reader for
    theirs = SdkRecorder(sdk_exporter._preferred_temporality)
    try:
        stream = measures()
        assert len({m.name for m in stream}) == len(COUNTERS) + len(LEVELS) + 1  # every metric moves
        for batch in (stream[:7], stream[7:], [], stream[:3]):  # a push after each batch, one after nothing
            ours.record_all(batch)
            for measure in batch:
                theirs.record(measure)
            expected, got = points(theirs.data()), points(ours.metrics_data())
            assert got == pytest.approx(expected) if expected else got == {}
            assert got or (preference != "cumulative" and not batch)
    finally:
        ours.shutdown(0.1, push=False)
        theirs.provider.shutdown()


def test_nothing_is_pushed_before_the_first_measurement() -> None:
    recorder = MetricRecorder(OtelTarget(traces_url=None, metrics_url=URL), URL, print)
    try:
        assert recorder.metrics_data() is None
        recorder.record(Measure("mcpwatch.heartbeats", 1.0, {}))
        data = recorder.metrics_data()
        assert data is not None and points(data)[("mcpwatch.heartbeats", frozenset())][1:] == (1.0, True)
    finally:
        recorder.shutdown(0.1, push=False)


def one_name_per_call(count: int, size: int = 8) -> list[Measure]:
    """A host naming a tool (and a method) never seen before in each call: both are the host's to choose."""
    found = []
    for n in range(count):
        tool = f"t{n:0{size - 1}d}"
        call: dict[str, str | int | float | bool] = {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool}
        found.append(Measure(DURATION_METRIC, 0.1 * (n % 7), call))
        found.append(Measure("mcpwatch.deadlines", 1.0, {"gen_ai.tool.name": tool}))
        found.append(Measure("mcpwatch.calls.in_flight", 1.0, {"mcp.method.name": f"m/{n}"}))
    return found


@pytest.mark.parametrize("preference", ["cumulative", "delta"])
def test_a_new_name_per_call_keeps_the_sdk_s_series_and_its_overflow(
    preference: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK kept 2,000 attribute sets per metric and added the rest to one point marked
    `otel.metric.overflow`; the fold kept every set a host made up, for ever (cumulative), each pushed each time."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", preference)
    ours = MetricRecorder(OtelTarget(traces_url=None, metrics_url=URL, metrics_interval_ms=3_600_000), URL, print)
    theirs = SdkRecorder(OTLPMetricExporter(endpoint=URL)._preferred_temporality)
    try:
        stream = one_name_per_call(3_500)
        overflowed = []
        for batch in (stream[:3_000], stream[3_000:], stream[:30]):
            ours.record_all(batch)
            for measure in batch:
                theirs.record(measure)
            expected, got = points(theirs.data()), points(ours.metrics_data())
            assert got == pytest.approx(expected)
            assert len(got) <= 3 * 2_001
            overflowed.append((DURATION_METRIC, frozenset({("otel.metric.overflow", True)})) in got)
        assert overflowed == [False, True, preference == "cumulative"]  # 1,000 calls, then 2,500 more
    finally:
        ours.shutdown(0.1, push=False)
        theirs.provider.shutdown()


def test_long_names_are_held_to_a_bound_in_bytes() -> None:
    """2,000 sets of 64 KiB names would be 128 MiB per metric: the attribute text kept per metric is bounded too,
    the sets beyond it added to the overflow point."""
    fold = OtlpMetricFold(0)
    for measure in one_name_per_call(300, size=64 * 1024):
        fold.record(measure)
    snapshot = fold.snapshot(1)
    for series in (snapshot.durations, snapshot.counters):
        held = sum(len(str(k)) + len(str(v)) for point in series for k, v in point.attributes.items())
        assert held <= MAX_ATTRIBUTE_BYTES + 100
        assert {"otel.metric.overflow": True} in [point.attributes for point in series]
    assert sum(point.buckets.count for point in snapshot.durations) == 300  # nothing lost, only merged


def test_a_collector_that_never_answers_does_not_hold_the_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last push at exit ran on the exiting thread, bounded only by the exporter's own timeout and retries,
    not by the `timeout_s` shutdown was given; now it is the push thread's, and a push still going is said."""
    monkeypatch.setattr(exporter, "EXPORT_TIMEOUT_S", 3_600.0)  # only the bound shutdown is given can end the wait
    told: list[tuple[bool, str | None]] = []
    with HostileCollector("silent") as collector:
        url = f"{collector.endpoint}/v1/metrics"
        target = OtelTarget(traces_url=None, metrics_url=url, metrics_interval_ms=3_600_000)
        recorder = MetricRecorder(target, url, lambda ok, problem: told.append((ok, problem)))
        recorder.record(Measure("mcpwatch.heartbeats", 1.0, {}))
        done = threading.Event()

        def shut_down() -> None:
            recorder.shutdown(0.2)
            done.set()

        threading.Thread(target=shut_down, daemon=True).start()
        assert done.wait(60), "shutdown waited on a collector that never answers"
        assert told and told[0][0] is False and "not done within 0.2 s" in (told[0][1] or "")


def test_a_value_the_sdk_drops_is_dropped() -> None:
    """The SDK's instruments drop a measurement that is not finite, and a negative one on a counter or the
    histogram; the fold added it, so one NaN made a cumulative sum NaN for the rest of the wrapper's life."""
    ours = MetricRecorder(OtelTarget(traces_url=None, metrics_url=URL, metrics_interval_ms=3_600_000), URL, print)
    theirs = SdkRecorder(OTLPMetricExporter(endpoint=URL)._preferred_temporality)
    odd = (float("nan"), float("inf"), float("-inf"), -1.0)
    stream = [Measure(DURATION_METRIC, v, {"mcp.method.name": "tools/call"}) for v in (*odd, 0.5)]
    stream += [Measure("mcpwatch.deadlines", v, {"gen_ai.tool.name": "x"}) for v in (*odd, 1.0)]
    try:
        ours.record_all(stream)
        for measure in stream:
            theirs.record(measure)
        assert points(ours.metrics_data()) == points(theirs.data())
        ours.record_all([Measure("mcpwatch.calls.in_flight", v, {"mcp.method.name": "m"}) for v in (1.0, *odd[:3])])
        level = points(ours.metrics_data())[("mcpwatch.calls.in_flight", frozenset({("mcp.method.name", "m")}))]
        assert level[1] == 1.0
    finally:
        ours.shutdown(0.1, push=False)
        theirs.provider.shutdown()


def test_a_name_that_is_not_unicode_never_stops_the_pushes() -> None:
    """A host may call a tool named with a lone surrogate (legal JSON): the SDK's encoder cannot encode it and
    dropped the attribute (its log is silenced), so the series reached the collector as calls of no tool at all,
    two such tools as two points alike. It is sent with U+FFFD in its place."""
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics

    ours = MetricRecorder(OtelTarget(traces_url=None, metrics_url=URL, metrics_interval_ms=3_600_000), URL, print)
    try:
        ours.record_all(
            [
                Measure(DURATION_METRIC, 0.5, {"mcp.method.name": "tools/call", "gen_ai.tool.name": "a\ud800"}),
                Measure("mcpwatch.deadlines", 1.0, {"gen_ai.tool.name": "\udfff\U0001f600"}),
            ]
        )
        data = ours.metrics_data()
        assert data is not None
        body = encode_metrics(data).SerializeToString()
        names = {value for _, attrs in points(data) for key, value in attrs if key == "gen_ai.tool.name"}
        assert names == {"a\ufffd", "\ufffd\U0001f600"} and body
    finally:
        ours.shutdown(0.1, push=False)
