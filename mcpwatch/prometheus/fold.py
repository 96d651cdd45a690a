"""The wrapper's events → counts by bounded labels, for the scrape endpoint. No Prometheus import.

Every label value comes from a closed set, so a host cannot grow the series without end: a method outside MCP's,
or a tool the upstream never listed in a `tools/list` answer, is counted as `other`; request ids are never labels.
Events are only queued on the message pump; they are folded when a scrape reads the counts (or when the queue is
full), so the cost of a call is one append. What an event counts for is `mcpwatch.metrics`' reading, the one the
OpenTelemetry export also writes; only the labels are this module's.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.metrics import DURATION_BUCKETS, Metric, MetricEvents, Observation
from mcpwatch.terminal import safe

OTHER = "other"
MAX_TOOLS = 1000  # tool names kept as label values; more than this many listed tools: the rest are `other`
MAX_TOOL_NAME = 128
FOLD_AT = 4096  # events queued before they are folded on the pump even without a scrape
KINDS = frozenset(  # the kinds that move a counter; the levels are read from the status at each scrape
    {
        Kind.REQUEST_END,
        Kind.TOMBSTONE_HIT,
        Kind.LATE_RESULT,
        Kind.LATE_REUSE,
        Kind.UPSTREAM_STATE,
        Kind.HEARTBEAT,
    }
)
METHODS = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    }
)
OUTCOMES = frozenset(o.value for o in Outcome)
LATE_WHAT = frozenset({"response", "progress"})


class ToolNames:
    """The tool names the upstream listed (every host session's `tools/list` answers), at most MAX_TOOLS, each with
    its label value: the name with control characters and lone surrogates shown as escapes (`terminal.safe`, as
    the console shows it), so the exposition is valid UTF-8 and carries no ESC, C1 or NUL whatever the upstream
    lists. Two names that show the same share their series."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # listed name → its label value

    def add_listed(self, result: Any) -> None:
        """Take the names of a `tools/list` result; anything that is not a short string is ignored."""
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if len(self.names) >= MAX_TOOLS:
                return
            if isinstance(name, str) and 0 < len(name) <= MAX_TOOL_NAME and name not in self.names:
                self.names[name] = safe(name)

    def labels(self) -> set[str]:
        """The label values of every listed tool."""
        return set(self.names.values())

    def label(self, tool: str | None) -> str:
        if tool is None:
            return ""
        return self.names.get(tool, OTHER)


def bounded(value: Any, allowed: frozenset[str]) -> str:
    return value if isinstance(value, str) and value in allowed else OTHER


@dataclass
class Histogram:
    """Cumulative-ready bucket counts of one label set (`buckets[i]`: observations ≤ DURATION_BUCKETS[i] and
    above the previous bound; the last slot is +Inf)."""

    buckets: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), the last bound +Inf: the exposition's `le` buckets."""
        running, out = 0, []
        for bound, count in zip((*DURATION_BUCKETS, float("inf")), self.buckets, strict=True):
            running += count
            out.append((float(bound), running))
        return out


@dataclass
class Counts:
    """What the events have said so far, by bounded labels."""

    durations: dict[tuple[str, str, str], Histogram] = field(default_factory=dict)  # (method, tool, outcome)
    deadlines: dict[str, int] = field(default_factory=dict)  # tool
    late_answers: dict[tuple[str, str], int] = field(default_factory=dict)  # (tool, what)
    late_results: dict[tuple[str, str], int] = field(default_factory=dict)  # (tool, outcome)
    late_reuses: dict[str, int] = field(default_factory=dict)  # tool
    upstream_restarts: int = 0
    heartbeats: int = 0


def _add(counter: dict[Any, int], key: Any) -> None:
    counter[key] = counter.get(key, 0) + 1


class MetricFold:
    """An event sink: `emit` queues (on the pump), `counts` folds what is queued and returns the totals."""

    def __init__(self, tools: ToolNames | None = None) -> None:
        self.tools = tools or ToolNames()
        self._queue: deque[Event] = deque()
        self._counts = Counts()
        self._events = MetricEvents(levels=False)

    def emit(self, event: Event) -> None:
        if event.kind in KINDS:
            self._queue.append(event)
            if len(self._queue) >= FOLD_AT:
                self._fold()

    def counts(self) -> Counts:
        self._fold()
        return self._counts

    def _fold(self) -> None:
        queue = self._queue
        while queue:
            self.feed(queue.popleft())

    def feed(self, event: Event) -> None:
        counts, names = self._counts, self.tools.names
        for seen in self._events.observe(event):
            tool = seen[3]  # ToolNames.label, inline: a scrape folds thousands of these
            _COUNT[seen[0]](counts, seen, "" if tool is None else names.get(tool, OTHER))


def _duration(counts: Counts, seen: Observation, tool: str) -> None:
    key = (bounded(seen.method, METHODS), tool, bounded(seen.outcome, OUTCOMES))
    histogram = counts.durations.get(key)
    if histogram is None:
        histogram = counts.durations[key] = Histogram()
    histogram.observe(seen.value)


def _restart(counts: Counts, seen: Observation, tool: str) -> None:
    counts.upstream_restarts += 1


def _heartbeat(counts: Counts, seen: Observation, tool: str) -> None:
    counts.heartbeats += 1


_COUNT: dict[Metric, Callable[[Counts, Observation, str], None]] = {
    Metric.DURATION: _duration,
    Metric.DEADLINES: lambda counts, seen, tool: _add(counts.deadlines, tool),
    Metric.LATE_ANSWERS: lambda counts, seen, tool: _add(counts.late_answers, (tool, bounded(seen.what, LATE_WHAT))),
    Metric.LATE_RESULTS: lambda counts, seen, tool: _add(counts.late_results, (tool, bounded(seen.outcome, OUTCOMES))),
    Metric.LATE_REUSES: lambda counts, seen, tool: _add(counts.late_reuses, tool),
    Metric.UPSTREAM_RESTARTS: _restart,
    Metric.HEARTBEATS: _heartbeat,
}
"""How each metric is counted; the levels (calls in flight, tombstones) are read from the status at each scrape."""
