"""Trends: per tool, calls, deadlines and errors per minute and p50/p95 latency over a window, from the log.

Textual-free. Live and replay both read the session's log through `EventReader.trend_rows` into a `TrendLog`
(per-minute rollups, read once and then only what is new), so what the Trends screen draws for a recording is what
it drew live, and drawing any window is a fold over minutes, not over events. The window ends at "now" (the wall
clock live, the replay position in a recording) and is cut into at most about `MAX_BUCKETS` buckets of whole
minutes, aligned to the clock.
"""

from __future__ import annotations

import bisect
import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpwatch.console.headless.wire_text import clean
from mcpwatch.store.reader import EventReader

# name → seconds (None: the whole session up to now)
WINDOWS: dict[str, float | None] = {"15 min": 900.0, "1 h": 3600.0, "session": None}
WINDOW_ORDER = tuple(WINDOWS)
MAX_BUCKETS = 60
ERROR_OUTCOMES = frozenset({"error", "tool_error", "upstream_lost"})
DEADLINE_OUTCOMES = frozenset({"deadline"})


@dataclass(frozen=True, slots=True)
class TrendMarker:
    """A moment worth a vertical mark: a configuration change or an upstream restart."""

    ts: float
    kind: str  # "config" | "restart"
    text: str
    bucket: int


@dataclass(slots=True)
class ToolTrend:
    """One tool's series, one value per bucket (latency None where the bucket had no finished call)."""

    tool: str
    calls: list[int]
    deadlines: list[int]
    errors: list[int]
    p50_ms: list[float | None]
    p95_ms: list[float | None]
    total_calls: int = 0
    total_deadlines: int = 0
    total_errors: int = 0
    p50_all_ms: float | None = None
    p95_all_ms: float | None = None


@dataclass(slots=True)
class Trends:
    window: str
    start_ts: float
    end_ts: float
    bucket_s: float
    tools: list[ToolTrend] = field(default_factory=list)
    markers: list[TrendMarker] = field(default_factory=list)

    @property
    def buckets(self) -> int:
        return max(1, math.ceil((self.end_ts - self.start_ts) / self.bucket_s))

    def per_minute(self, count: int) -> float:
        """A bucket's count as a rate per minute."""
        return count * 60.0 / self.bucket_s


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list (None for an empty one)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def bucket_seconds(span_s: float, max_buckets: int = MAX_BUCKETS) -> float:
    """Whole minutes per bucket so that the span fits in at most `max_buckets` buckets."""
    minutes = max(1, math.ceil(max(span_s, 1.0) / 60.0 / max_buckets))
    return minutes * 60.0


def _marker(kind: str, data_text: str | None) -> tuple[str, str] | None:
    """A configuration change, or an upstream coming back as a new generation (a restart); else None."""
    try:
        data: Any = clean(json.loads(data_text)) if data_text else {}  # decoded JSON may hold what the text escaped
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    if kind == "config_change":
        return "config", f"{data.get('key', 'config')}: {data.get('old')} → {data.get('new')}"
    generation = data.get("generation")
    if data.get("state") == "connecting" and isinstance(generation, int) and generation > 1:
        return "restart", f"upstream restart (generation {generation})"
    return None


_OK, _DEADLINE, _ERROR = 0, 1, 2


@dataclass(slots=True)
class _Minute:
    """One tool's calls that ended in one clock minute; `entries` keep the detail for a window ending inside it."""

    calls: int = 0
    deadlines: int = 0
    errors: int = 0
    durations: list[float] = field(default_factory=list)
    entries: list[tuple[float, int, float | None]] = field(default_factory=list)


Row = tuple[int, float, str, str | None, str | None, float | None, str | None]


class TrendLog:
    """One session's request ends, configuration changes and restarts, rolled up per tool and clock minute.

    `update(reader)` reads what is new since the last call (all of it the first time: the one slow step on a big
    log, done off the UI thread); `trends(window, end_ts)` is then cheap whatever the log's size. Thread-safe.
    """

    def __init__(self, path: str, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.after_seq = 0
        self.rows_read = 0
        self.first_ts: float | None = None
        self._minutes: dict[str, dict[int, _Minute]] = {}
        self._markers: list[TrendMarker] = []
        self._lock = threading.Lock()
        # Folded buckets that ended before everything read since: (tool, bucket_s, start) → its numbers. Buckets
        # are aligned to the clock, so as "now" moves on, all but the last are found here instead of refolded.
        self._buckets: dict[tuple[str, float, float], _Bucket] = {}

    def update(self, reader: EventReader, *, page: int = 20_000, progress: Callable[[int], None] | None = None) -> int:
        """Read the rows written since the last update; returns how many."""
        total = 0
        while True:
            rows = reader.trend_rows(self.session_id, after_seq=self.after_seq, limit=page)
            self.add_rows(clean(rows))  # names from the log, made safe for the terminal
            total += len(rows)
            if progress is not None:
                progress(total)
            if len(rows) < page:
                return total

    def add_rows(self, rows: list[Row]) -> None:
        """Fold rows from `EventReader.trend_rows` (in seq order)."""
        with self._lock:
            earliest = min((row[1] for row in rows if row[2] == "request_end"), default=None)
            if earliest is not None:
                self._buckets = {k: v for k, v in self._buckets.items() if k[2] + k[1] <= earliest}
            for seq, ts, kind, tool, outcome, duration, data in rows:
                self.after_seq = max(self.after_seq, int(seq))
                self.rows_read += 1
                if self.first_ts is None or ts < self.first_ts:
                    self.first_ts = ts
                if kind != "request_end":
                    found = _marker(kind, data)
                    if found is not None:
                        bisect.insort(self._markers, TrendMarker(ts, found[0], found[1], 0), key=lambda m: m.ts)
                    continue
                minute = self._minutes.setdefault(tool or "(unknown)", {}).setdefault(int(ts // 60), _Minute())
                code = _DEADLINE if outcome in DEADLINE_OUTCOMES else _ERROR if outcome in ERROR_OUTCOMES else _OK
                ms = float(duration) * 1000.0 if isinstance(duration, int | float) and math.isfinite(duration) else None
                minute.calls += 1
                minute.deadlines += code == _DEADLINE
                minute.errors += code == _ERROR
                if ms is not None:
                    minute.durations.append(ms)
                minute.entries.append((ts, code, ms))

    def trends(
        self,
        window: str,
        end_ts: float,
        *,
        session_start_ts: float | None = None,
        max_buckets: int = MAX_BUCKETS,
    ) -> Trends:
        """The window ending at `end_ts`, in buckets of whole minutes aligned to the clock."""
        if window not in WINDOWS:
            raise ValueError(f"unknown window {window!r} (one of {', '.join(WINDOWS)})")
        span = WINDOWS[window]
        if span is None:
            first = session_start_ts if session_start_ts is not None else self.first_ts
            span = end_ts - (first if first is not None else end_ts)
        span = max(60.0, span)
        bucket_s = bucket_seconds(span, max_buckets)
        start = math.floor((end_ts - span) / bucket_s) * bucket_s
        trends = Trends(window, start, end_ts, bucket_s)
        n = trends.buckets
        with self._lock:
            for tool, minutes in self._minutes.items():
                tool_trend = _fold_tool(tool, minutes, start, end_ts, bucket_s, n, self._buckets)
                if tool_trend is not None:
                    trends.tools.append(tool_trend)
            lo = bisect.bisect_left(self._markers, start, key=lambda m: m.ts)
            hi = bisect.bisect_left(self._markers, end_ts, key=lambda m: m.ts)
            for m in self._markers[lo:hi]:
                trends.markers.append(TrendMarker(m.ts, m.kind, m.text, min(n - 1, int((m.ts - start) // bucket_s))))
        trends.tools.sort(key=lambda t: (-t.total_calls, t.tool))
        return trends


@dataclass(slots=True)
class _Bucket:
    calls: int = 0
    deadlines: int = 0
    errors: int = 0
    durations: list[float] = field(default_factory=list)  # sorted
    p50: float | None = None
    p95: float | None = None


def _fold_bucket(minutes: dict[int, _Minute], lo: float, hi: float, end_ts: float) -> _Bucket:
    """The calls that ended in [lo, min(hi, end_ts))."""
    out = _Bucket()
    for index in range(int(lo // 60), math.ceil(min(hi, end_ts) / 60)):
        minute = minutes.get(index)
        if minute is None:
            continue
        if (index + 1) * 60 <= end_ts:
            out.calls += minute.calls
            out.deadlines += minute.deadlines
            out.errors += minute.errors
            out.durations.extend(minute.durations)
            continue
        for ts, code, ms in minute.entries:  # the minute "now" falls in: only what ended before now
            if ts >= end_ts:
                continue
            out.calls += 1
            out.deadlines += code == _DEADLINE
            out.errors += code == _ERROR
            if ms is not None:
                out.durations.append(ms)
    out.durations.sort()
    out.p50 = percentile(out.durations, 0.5)
    out.p95 = percentile(out.durations, 0.95)
    return out


def _fold_tool(
    tool: str,
    minutes: dict[int, _Minute],
    start: float,
    end_ts: float,
    bucket_s: float,
    n: int,
    cache: dict[tuple[str, float, float], _Bucket],
) -> ToolTrend | None:
    buckets: list[_Bucket] = []
    for b in range(n):
        lo = start + b * bucket_s
        hi = lo + bucket_s
        key = (tool, bucket_s, lo)
        found = cache.get(key) if hi <= end_ts else None
        if found is None:
            found = _fold_bucket(minutes, lo, hi, end_ts)
            if hi <= end_ts:
                cache[key] = found
        buckets.append(found)
    calls = [x.calls for x in buckets]
    if not any(calls):
        return None
    whole = sorted(v for x in buckets for v in x.durations)
    return ToolTrend(
        tool,
        calls,
        [x.deadlines for x in buckets],
        [x.errors for x in buckets],
        [x.p50 for x in buckets],
        [x.p95 for x in buckets],
        total_calls=sum(calls),
        total_deadlines=sum(x.deadlines for x in buckets),
        total_errors=sum(x.errors for x in buckets),
        p50_all_ms=percentile(whole, 0.5),
        p95_all_ms=percentile(whole, 0.95),
    )


_LOGS: dict[tuple[str, str], TrendLog] = {}
_LOGS_LOCK = threading.Lock()
KEEP_LOGS = 4


def trend_log(path: str, session_id: str) -> TrendLog:
    """The shared `TrendLog` of a session (a few kept, so reopening Trends does not read the log again)."""
    key = (str(path), session_id)
    with _LOGS_LOCK:
        found = _LOGS.pop(key, None) or TrendLog(str(path), session_id)
        _LOGS[key] = found
        while len(_LOGS) > KEEP_LOGS:
            _LOGS.pop(next(iter(_LOGS)))
        return found
