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
from collections import Counter
from dataclasses import dataclass, field
from functools import partial, reduce
from math import isfinite
from operator import add
from typing import NamedTuple

from mcpwatch.otel.encode import utf8_text
from mcpwatch.otel.spans import DURATION_BUCKETS, DURATION_METRIC, AttributeValue, Durations, Measure, SharedAttributes

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

MAX_SERIES = 2000
"""Attribute sets per metric, as the SDK's default cardinality limit: a host names the tool and the method of each
call, so a new one per call would otherwise be a series held (cumulative: for ever) and pushed every time."""
MAX_ATTRIBUTE_BYTES = 1 << 20
"""Attribute text per metric: 2,000 names of 64 KiB would be 128 MiB. The sets past either bound add up in one
point marked `otel.metric.overflow`, as the SDK's do (nothing lost, only merged)."""

Attributes = frozenset[tuple[str, AttributeValue]]
OVERFLOW: Attributes = frozenset({("otel.metric.overflow", True)})


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

    def add_all(self, values: list[float]) -> None:
        """`add` for each of these (finite, not negative) values in turn, with the loops in C: the total summed in
        the same order, so to the same bits."""
        counts = self.counts
        for at, hits in Counter(map(_bucket_of, values)).items():
            counts[at] += hits
        self.count += len(values)
        self.total = reduce(add, values, self.total)
        low, high = min(values), max(values)
        if low < self.low:
            self.low = low
        if high > self.high:
            self.high = high


_bucket_of = partial(bisect_left, DURATION_BUCKETS)


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
        self._held: dict[str, tuple[int, int]] = {}  # metric → (attribute sets, their text's length) kept

    def record(self, measure: Measure | Durations) -> None:
        if isinstance(measure, Durations):
            self._record_run(measure.values, measure.attributes)
            return
        name, value, attributes = measure
        if not isfinite(value) or (value < 0 and name not in LEVELS):
            return  # as the SDK's instruments: one NaN would make a cumulative sum NaN for good
        key = attributes.key if type(attributes) is SharedAttributes else frozenset(attributes.items())
        if name == DURATION_METRIC:
            buckets = self.durations.get(key)
            if buckets is None:
                key = self._admit(name, key)
                buckets = self.durations.get(key) or self.durations.setdefault(key, Buckets(self.now_ns))
            buckets.add(value)
        elif name in COUNTERS:
            if (name, key) not in self.counters:
                key = self._admit(name, key)
            start, total = self.counters.get((name, key), (self.now_ns, 0.0))
            self.counters[(name, key)] = (start, total + value)
        elif name in LEVELS:
            if (name, key) not in self.levels:
                key = self._admit(name, key)
            self.levels[(name, key)] = self.levels.get((name, key), 0.0) + value

    def _record_run(self, values: list[float], attributes: SharedAttributes) -> None:
        """A `Durations`: its values recorded as one `Measure` each would be, added up at once when every one is."""
        if not all(map(isfinite, values)) or min(values) < 0:  # one would be skipped: each in turn
            for value in values:
                self.record(Measure(DURATION_METRIC, value, attributes))
            return
        key = attributes.key
        buckets = self.durations.get(key)
        if buckets is None:
            key = self._admit(DURATION_METRIC, key)
            buckets = self.durations.get(key) or self.durations.setdefault(key, Buckets(self.now_ns))
        buckets.add_all(values)

    def _admit(self, name: str, key: Attributes) -> Attributes:
        """A new attribute set's own key while the metric is within MAX_SERIES and MAX_ATTRIBUTE_BYTES, else the
        overflow's (whose own series is the one beyond the bound, as in the SDK)."""
        series, held = self._held.get(name, (0, 0))
        size = sum(len(k) + len(str(v)) for k, v in key)
        if series >= MAX_SERIES or held + size > MAX_ATTRIBUTE_BYTES:
            return OVERFLOW
        self._held[name] = (series + 1, held + size)
        return key

    def snapshot(self, now_ns: int) -> Snapshot:
        """Every series (cumulative), or those that moved since the last snapshot (delta: they start again)."""
        since = self._last_ns
        self._last_ns = now_ns
        durations = [
            HistogramPoint(_utf8(key), since if self.delta else b.start_ns, b if self.delta else b.copy())
            for key, b in self.durations.items()
        ]
        counters = [
            Point(name, _utf8(key), since if self.delta else start, total)
            for (name, key), (start, total) in self.counters.items()
        ]
        levels = [Point(name, _utf8(key), self.start_ns, value) for (name, key), value in self.levels.items()]
        if self.delta:
            self.durations, self.counters = {}, {}
            self._held = {name: held for name, held in self._held.items() if name in LEVELS}
        return Snapshot(now_ns, durations, counters, levels)


def _utf8(key: Attributes) -> dict[str, AttributeValue]:
    """A series' attributes as a push sends them: a lone surrogate (a host's tool name may hold one, legal JSON) as
    U+FFFD, since the SDK's encoder raises on it and the series, kept for good, would fail every push after."""
    attributes = dict(key)
    for name, value in attributes.items():
        if type(value) is str and not value.isascii():
            attributes[name] = utf8_text(value)
    return attributes
