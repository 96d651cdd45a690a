"""The OTLP side: spans and metrics built from the wrapper's events, sent from a thread of its own. It needs the
optional packages (`pip install 'mcpwatch[otel]'`); nothing imports this module unless export is asked for.

The recorder hands each event of interest to `OtelSink.emit`, which only appends it to a bounded queue (on the
message pump, so nothing else); the thread folds events into spans (`spans.SpanBuilder`), batches them to the
collector and adds the metrics up (`metric_fold.OtlpMetricFold`), which a thread of their own pushes periodically.
A slow or unreachable collector only fills the queue: what does not fit is counted as dropped, in `status` and in
the log, and the host never waits.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from mcpwatch import __version__
from mcpwatch.events import Event
from mcpwatch.otel.bounded import BoundedSession
from mcpwatch.otel.config import OtelTarget
from mcpwatch.otel.encode import SpanEncoder
from mcpwatch.otel.metric_fold import COUNTERS, LEVEL_UNITS, OtlpMetricFold
from mcpwatch.otel.spans import (
    DURATION_BUCKETS,
    DURATION_METRIC,
    KINDS,
    CallSpan,
    Durations,
    Measure,
    PlainEncode,
    PlainSpan,
    Span,
    SpanBuilder,
)

# The SDK logs every failed export attempt and retry at WARNING; with no handler of its own that reaches stderr, which
# hosts keep as the server's log. mcpwatch says it once itself and counts the rest (status, the log).
_SDK_LOG = logging.getLogger("opentelemetry")
_SDK_LOG.addHandler(logging.NullHandler())
_SDK_LOG.propagate = False

BATCH_MAX = 2048
"""A request's spans by weight (`request_chunks`): a plain span weighs 1, a full one 1, its events and its start's
text by `TEXT_PER_WEIGHT` characters, so a request holds about 2,048 plain spans' bytes at most (600 KB), whatever
the spans hold (but one span alone); at 1,000 calls/s a second's spans go in one request, where chunks of 512 spans
took two or three, each about 0.8 ms of the wrapper's CPU."""
TEXT_PER_WEIGHT = 256
"""Characters of a full span's name and attributes that weigh as much as a plain span: a host naming its tools in
tens of kilobytes would otherwise put 2,048 of them, a gigabyte, in one request."""
EXPORT_INTERVAL_S = 1.0
GATHER_S = 0.25
"""A round's gathering once events come: each round has a fixed cost (a wakeup, the held calls' check, the lock of
the metrics), which a round of 0.1 s spread over only 25 calls at 250 calls/s. The queue (`queue_max`, 10,000
events), emptied every round, still takes 40,000 events a second, far past what one wrapper forwards."""
EXPORT_TIMEOUT_S = 5.0


def service_resource(target: OtelTarget) -> Resource:
    """The resource every span and metric carries (OTEL_RESOURCE_ATTRIBUTES are merged in by the SDK)."""
    return Resource.create({"service.name": target.service_name, "service.version": __version__})


class SpanSender:
    """Turns finished `CallSpan`s into SDK spans and sends them over OTLP/HTTP."""

    def __init__(self, target: OtelTarget, url: str) -> None:
        self.resource = service_resource(target)
        self.scope = InstrumentationScope("mcpwatch", __version__)
        self.session = BoundedSession()
        self.exporter = OTLPSpanExporter(
            endpoint=url, headers=target.headers or None, timeout=EXPORT_TIMEOUT_S, session=self.session
        )
        self.encoder = SpanEncoder(self.resource.attributes, self.scope.name, self.scope.version or "")
        # The exporter's HTTP client (its retries, compression, headers), given bytes encoded here; an SDK without
        # it gets ReadableSpans through its own encoder, as before.
        client = getattr(self.exporter, "_client", None)
        self._post: Callable[[bytes], Any] | None = getattr(client, "export", None)
        # a plain call's span encoded as it ends (`SpanBuilder.fold_round`), when the bytes are what is sent
        self.encode_plain: PlainEncode | None = self.encoder.record_field if self._post is not None else None

    def convert(self, span: CallSpan) -> ReadableSpan:
        flags = TraceFlags(TraceFlags.SAMPLED)
        context = SpanContext(int(span.trace_id, 16), int(span.span_id, 16), False, flags)
        parent = None
        if span.parent_span_id:
            parent = SpanContext(int(span.trace_id, 16), int(span.parent_span_id, 16), True, flags)
        status = Status(StatusCode.ERROR, span.error) if span.error else Status()
        attributes = dict(span.attributes)
        if span.dropped_events:
            attributes["mcpwatch.events_dropped"] = span.dropped_events
        return ReadableSpan(
            name=span.name,
            context=context,
            parent=parent,
            resource=self.resource,
            attributes=attributes,
            events=[SpanEvent(name, attrs, timestamp=ns) for name, ns, attrs in span.events],
            kind=SpanKind.CLIENT,
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=self.scope,
        )

    def send(self, spans: Sequence[Span]) -> bool:
        self.session.last_problem = None
        if self._post is None:  # never bytes: `encode_plain` is None
            full = [span.full() if type(span) is PlainSpan else span for span in spans]
            result = self.exporter.export([self.convert(span) for span in full])  # type: ignore[arg-type]  # all CallSpans now
            return result.name == "SUCCESS"
        if getattr(self.exporter, "_shutdown", False):
            return False
        return bool(self._post(self.encoder.request(spans)).success)

    def shutdown(self) -> None:
        self.exporter.shutdown()  # type: ignore[no-untyped-call]  # the OTLP exporter leaves shutdown unannotated


class CountingMetricExporter(OTLPMetricExporter):
    """The SDK's metric exporter, telling each push's outcome: the SDK's reader swallows failures silently, and a
    trace-only engine (Phoenix, MLflow) refuses every metrics push."""

    def __init__(self, url: str, headers: dict[str, str] | None, on_push: Callable[[bool, str | None], None]) -> None:
        self.session = BoundedSession()
        super().__init__(endpoint=url, headers=headers, timeout=EXPORT_TIMEOUT_S, session=self.session)
        self._on_push = on_push

    def export(self, metrics_data: Any, timeout_millis: float | None = 10_000, **kwargs: Any) -> MetricExportResult:
        self.session.last_problem = None
        try:
            result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:  # boundary: counted like a refusal, never raised into the SDK's thread
            self._on_push(False, f"{type(exc).__name__}: {exc}")
            return MetricExportResult.FAILURE
        self._on_push(result == MetricExportResult.SUCCESS, self.session.last_problem)
        return result


TEMPORALITY = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"


def delta_preferred(environ: Mapping[str, str]) -> bool:
    """The temporality preference as the SDK's OTLP exporters read it: `delta` and `lowmemory` send the counters and
    the histogram as deltas (the up-down counters stay cumulative); anything else, cumulative."""
    return environ.get(TEMPORALITY, "cumulative").strip().lower() in ("delta", "lowmemory")


class MetricRecorder:
    """The convention's duration histogram and mcpwatch's counters and levels: added up by `OtlpMetricFold` as the
    export thread folds events, and pushed every `metrics_interval_ms` by a thread of its own (as the SDK's periodic
    reader did) through the SDK's OTLP exporter. Nothing is pushed before the first measurement."""

    DURATION_DESCRIPTION = "Duration of MCP requests the wrapper forwarded, until answered"

    def __init__(self, target: OtelTarget, url: str, on_push: Callable[[bool, str | None], None]) -> None:
        self.exporter = CountingMetricExporter(url, target.headers or None, on_push)
        self._on_push = on_push
        self.resource = service_resource(target)
        self.scope = InstrumentationScope("mcpwatch", __version__)
        self.instruments = dict(COUNTERS)  # each counter's name and description
        delta = delta_preferred(os.environ)
        self.temporality = AggregationTemporality.DELTA if delta else AggregationTemporality.CUMULATIVE
        self.fold = OtlpMetricFold(time.time_ns(), delta=self.temporality == AggregationTemporality.DELTA)
        self.lock = threading.Lock()  # the fold: added to on the export thread, read on the push thread
        self.interval_s = target.metrics_interval_ms / 1000
        self._stop = threading.Event()
        self._last_push = False  # set by shutdown: the thread pushes once more on its way out
        self._thread = threading.Thread(target=self._run, name="mcpwatch-otel-metrics", daemon=True)
        self._thread.start()

    def record_all(self, measures: Iterable[Measure | Durations]) -> None:
        """Add a batch of measurements (one lock for the batch)."""
        with self.lock:
            fold = self.fold
            fold.now_ns = time.time_ns()
            for measure in measures:
                fold.record(measure)

    def record(self, measure: Measure) -> None:
        self.record_all((measure,))

    def metrics_data(self) -> MetricsData | None:
        """What a push sends now, as the SDK's data (None: nothing measured yet, or nothing new for deltas)."""
        with self.lock:
            snapshot = self.fold.snapshot(time.time_ns())
        if snapshot.empty():
            return None
        now, temporality = snapshot.now_ns, self.temporality
        metrics: list[Metric] = []
        if snapshot.durations:
            points = [
                HistogramDataPoint(
                    attributes=p.attributes,
                    start_time_unix_nano=p.start_ns,
                    time_unix_nano=now,
                    count=p.buckets.count,
                    sum=p.buckets.total,
                    bucket_counts=p.buckets.counts,
                    explicit_bounds=DURATION_BUCKETS,
                    min=p.buckets.low,
                    max=p.buckets.high,
                )
                for p in snapshot.durations
            ]
            histogram = Histogram(data_points=points, aggregation_temporality=temporality)
            metrics.append(Metric(DURATION_METRIC, self.DURATION_DESCRIPTION, "s", histogram))
        for numbers, monotonic in ((snapshot.counters, True), (snapshot.levels, False)):
            by_name: dict[str, list[NumberDataPoint]] = {}
            for n in numbers:
                by_name.setdefault(n.name, []).append(NumberDataPoint(n.attributes, n.start_ns, now, n.value))
            for name, data_points in by_name.items():
                kind = temporality if monotonic else AggregationTemporality.CUMULATIVE
                data = Sum(data_points=data_points, aggregation_temporality=kind, is_monotonic=monotonic)
                metrics.append(Metric(name, self.instruments.get(name, ""), LEVEL_UNITS.get(name, ""), data))
        scope = ScopeMetrics(scope=self.scope, metrics=metrics, schema_url="")
        return MetricsData([ResourceMetrics(resource=self.resource, scope_metrics=[scope], schema_url="")])

    def push(self) -> None:
        data = self.metrics_data()
        if data is not None:
            self.exporter.export(data)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.push()
        if self._last_push:
            self.push()

    def shutdown(self, timeout_s: float, push: bool = True) -> None:
        """One last push (what was measured since the last), within `timeout_s`; then the exporter stops.

        The last push is the thread's own, so a collector that does not answer holds that daemon thread, never the
        caller (the wrapper's exit) past `timeout_s`; a push still going then is said, as a failed one."""
        self._last_push = push
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._on_push(False, f"the last metrics push was not done within {timeout_s:.1f} s of the exit")
        self.exporter.shutdown()


def request_chunks(spans: list[Span], limit: int = BATCH_MAX) -> list[list[Span]]:
    """Spans in order, cut into requests of at most `limit` by weight (`BATCH_MAX`)."""
    if CallSpan not in map(type, spans):  # each weighs 1 (the usual batch: its types read in C)
        return [spans[at : at + limit] for at in range(0, len(spans), limit)]
    chunks: list[list[Span]] = []
    chunk: list[Span] = []
    weight = 0
    for span in spans:
        full = span if type(span) is CallSpan else None
        size = 1 if full is None else 1 + len(full.events) + full.held_text // TEXT_PER_WEIGHT
        if chunk and weight + size > limit:
            chunks.append(chunk)
            chunk, weight = [], 0
        chunk.append(span)
        weight += size
    if chunk:
        chunks.append(chunk)
    return chunks


class OtelSink:
    """An event sink for the recorder: queues the events export needs; a thread does the rest. With nothing queued,
    held or unsent, the thread waits with no timeout until the next event (an idle wrapper is not woken)."""

    wake_factory: Callable[[], threading.Event] = threading.Event  # tests count the thread's waits through it

    def __init__(self, target: OtelTarget, on_warning: Callable[[str], object] | None = None) -> None:
        self.target = target
        self._on_warning = on_warning
        self._queue: deque[Event] = deque()
        self._queue_max = target.queue_max
        self._builder = SpanBuilder(target.late_window_s, lean=True)  # plain calls' spans as `PlainSpan`s
        self._spans = SpanSender(target, target.traces_url) if target.traces_url else None
        self._metrics = MetricRecorder(target, target.metrics_url, self._pushed) if target.metrics_url else None
        self.dropped = 0  # events that did not fit the queue
        self.spans_exported = 0
        self.spans_failed = 0
        self.metric_pushes = 0
        self.metric_pushes_failed = 0
        self.last_error: str | None = None
        self._warned = False  # the first failed export is told once; the rest are counted
        self._stop = threading.Event()
        self._wake = self.wake_factory()
        self._sleeping = False  # waiting with no timeout: the next event must wake the thread
        self.wakeups = 0  # rounds of the export thread (an idle one: none)
        self._thread = threading.Thread(target=self._run, name="mcpwatch-otel", daemon=True)
        self._thread.start()

    # on the message pump: nothing but a bounded append
    def emit(self, event: Event) -> None:
        if event.kind in KINDS:
            if len(self._queue) < self._queue_max:
                self._queue.append(event)
                if self._sleeping:
                    self._sleeping = False
                    self._wake.set()
            else:
                self.dropped += 1

    def status(self) -> dict[str, Any]:
        return {
            "traces_url": self.target.traces_url,
            "metrics_url": self.target.metrics_url,
            "spans_exported": self.spans_exported,
            "spans_failed": self.spans_failed,
            "metric_pushes": self.metric_pushes,
            "metric_pushes_failed": self.metric_pushes_failed,
            "events_dropped": self.dropped,
            "last_error": self.last_error,
        }

    # ------------------------------------------------------------------ the export thread

    def _run(self) -> None:
        batch: list[Span] = []
        last_send = time.monotonic()
        while not self._stop.is_set():
            if not batch and not self._queue and not self._builder.holding():
                self._sleeping = True  # then look again: an event queued before this is seen, one after wakes us
                if not self._queue and not self._stop.is_set():
                    self._wake.wait()
                self._sleeping = False
                self._wake.clear()
            self._stop.wait(GATHER_S)  # gather
            self.wakeups += 1
            batch.extend(self._fold(self._take()))
            batch.extend(self._builder.due(time.time()))
            if batch and (len(batch) >= BATCH_MAX or time.monotonic() - last_send >= EXPORT_INTERVAL_S):
                self._send(batch)
                batch = []
                last_send = time.monotonic()
        batch.extend(self._fold(self._take()))
        batch.extend(self._builder.drain())
        if batch:
            self._send(batch)

    def _take(self) -> list[Event]:
        queue, taken = self._queue, []
        while queue:
            taken.append(queue.popleft())
        return taken

    def _fold(self, events: Iterable[Event]) -> list[Span]:
        spans, measures = self._builder.fold_round(events, self._spans.encode_plain if self._spans else None)
        if measures and self._metrics is not None:
            self._metrics.record_all(measures)
        return spans

    def _send(self, spans: list[Span]) -> None:
        if self._spans is None:
            return
        for chunk in request_chunks(spans):
            problem = None
            try:
                ok = self._spans.send(chunk)
                problem = self._spans.session.last_problem
            except Exception as exc:  # boundary: an exporter fault must never reach the wrapper
                ok, problem = False, f"{type(exc).__name__}: {exc}"
            if ok:
                self.spans_exported += len(chunk)
            else:
                self.spans_failed += len(chunk)
                self._failed("traces", self.target.traces_url, problem)

    def _pushed(self, ok: bool, problem: str | None) -> None:
        """A metrics push ended (on the SDK's reader thread)."""
        self.metric_pushes += 1
        if not ok:
            self.metric_pushes_failed += 1
            self._failed("metrics", self.target.metrics_url, problem)

    def _failed(self, signal: str, url: str | None, problem: str | None) -> None:
        """Keep the last error; tell the first failure once (a warning event and one stderr line)."""
        self.last_error = f"{signal}: the collector at {url} did not take them ({problem or 'no answer in time'})"
        if not self._warned and self._on_warning is not None:
            self._warned = True
            hint = " (a trace-only engine? OTEL_METRICS_EXPORTER=none switches metrics off)" * (signal == "metrics")
            self._on_warning(f"OpenTelemetry {self.last_error}; counted in status, the wrapper goes on{hint}")

    def close(self, timeout_s: float = 2.0) -> None:
        """Send what is left, within `timeout_s` in all; what cannot be sent by then is counted, never waited for.

        The exporters are told to stop first: a retry's backoff ends at once, and a collector that does not answer
        holds only the export thread, which is a daemon and is left behind."""
        deadline = time.monotonic() + timeout_s
        self._stop.set()
        self._wake.set()
        self._thread.join(max(0.0, deadline - time.monotonic() - (0.5 if self._metrics else 0.0)))
        if self._spans is not None:
            self._spans.shutdown()
        if self._metrics is not None:
            self._metrics.shutdown(max(0.0, deadline - time.monotonic()))
