"""The OTLP metrics as running totals, kept by mcpwatch and read once per push, with no OpenTelemetry import.

Recording a measurement through the SDK's instruments cost the export thread about 9 µs a call (attribute
validation, a hash of the attributes, a lock, the aggregation's own objects), more than the rest of a call's
export. Here a measurement adds to a bucket list or a number found by its attributes; what the SDK did per call
is done once per push (`exporter.MetricRecorder` turns a `Snapshot` into the SDK's `MetricsData`, which its OTLP
exporter encodes and sends as before). The numbers are the ones the SDK's default aggregations give: an explicit
bucket histogram with count, sum, min and max; monotonic sums for the counters; cumulative sums for the levels.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import NamedTuple

from mcpwatch.otel.spans import DURATION_BUCKETS, DURATION_METRIC, AttributeValue, Measure

LEVELS = ("mcpwatch.calls.in_flight", "mcpwatch.tombstones")
"""Up-down counters: always cumulative (what is in flight now), whatever the temporality asked for."""
LEVEL_UNITS = {"mcpwatch.calls.in_flight": "{call}", "mcpwatch.tombstones": "{tombstone}"}
COUNTERS = {
    "mcpwatch.deadlines": "Calls cut at their deadline budget",
    "mcpwatch.late_answers": "Responses and progress that arrived after their call was cut (dropped)",
    "mcpwatch.late_results": "Cut tools/calls that answered after all (kept in the log)",
    "mcpwatch.late_reuses": "Calls answered at once with a stored late result (opt-in reuse)",
    "mcpwatch.upstream.restarts": "Times the upstream was started again after it was lost",
    "mcpwatch.heartbeats": "Progress sent by the wrapper to keep a host's idle clock alive",
}
"""Monotonic counters and their descriptions."""

Attributes = frozenset[tuple[str, AttributeValue]]


@dataclass
class Buckets:
    """One attribute set's durations: `counts[i]` holds values in (bound[i-1], bound[i]], the last slot +Inf."""

    start_ns: int
    counts: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS) + 1))
    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")

    def copy(self) -> Buckets:
        return Buckets(self.start_ns, list(self.counts), self.count, self.total, self.low, self.high)

    def add(self, value: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, value)] += 1
        self.count += 1
        self.total += value
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value


class Point(NamedTuple):
    """A number data point: a counter's or level's value for one attribute set since `start_ns`."""

    name: str
    attributes: dict[str, AttributeValue]
    start_ns: int
    value: float


class HistogramPoint(NamedTuple):
    attributes: dict[str, AttributeValue]
    start_ns: int
    buckets: Buckets


@dataclass
class Snapshot:
    """What one push sends, taken at `now_ns`."""

    now_ns: int
    durations: list[HistogramPoint]
    counters: list[Point]
    levels: list[Point]

    def empty(self) -> bool:
        return not (self.durations or self.counters or self.levels)


class OtlpMetricFold:
    """Running totals by metric and attribute set. `record` on the export thread; `snapshot` on the push's (the
    caller holds one lock around both)."""

    def __init__(self, start_ns: int, delta: bool = False) -> None:
        self.delta = delta  # counters and the histogram since the last push instead of since the start
        self.start_ns = start_ns  # the levels' start, and the first push's for deltas
        self._last_ns = start_ns
        self.durations: dict[Attributes, Buckets] = {}
        self.counters: dict[tuple[str, Attributes], tuple[int, float]] = {}  # → (start_ns, total)
        self.levels: dict[tuple[str, Attributes], float] = {}
        self.now_ns = start_ns  # the time of the latest measurement's batch: a series starts then

    def record(self, measure: Measure) -> None:
        name, value, attributes = measure
        key = frozenset(attributes.items())
        if name == DURATION_METRIC:
            buckets = self.durations.get(key)
            if buckets is None:
                buckets = self.durations[key] = Buckets(self.now_ns)
            buckets.add(value)
        elif name in COUNTERS:
            start, total = self.counters.get((name, key), (self.now_ns, 0.0))
            self.counters[(name, key)] = (start, total + value)
        elif name in LEVELS:
            self.levels[(name, key)] = self.levels.get((name, key), 0.0) + value

    def snapshot(self, now_ns: int) -> Snapshot:
        """Every series (cumulative), or those that moved since the last snapshot (delta: they start again)."""
        since = self._last_ns
        self._last_ns = now_ns
        durations = [
            HistogramPoint(dict(key), since if self.delta else b.start_ns, b if self.delta else b.copy())
            for key, b in self.durations.items()
        ]
        counters = [
            Point(name, dict(key), since if self.delta else start, total)
            for (name, key), (start, total) in self.counters.items()
        ]
        levels = [Point(name, dict(key), self.start_ns, value) for (name, key), value in self.levels.items()]
        if self.delta:
            self.durations, self.counters = {}, {}
        return Snapshot(now_ns, durations, counters, levels)
