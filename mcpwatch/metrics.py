"""The wrapper's events → metric observations: what each event means for the metrics, decided once.

The OpenTelemetry export (`otel/spans.py`) and the Prometheus scrape (`prometheus/fold.py`) both read these
observations and differ only in how they write them (OTLP instruments and attributes; Prometheus families with
bounded labels). Before, each folded events on its own and they disagreed: two host sessions each restarting their
upstream once were one restart to OpenTelemetry and two to Prometheus. No I/O, no library import.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from enum import StrEnum
from typing import NamedTuple

from mcpwatch.events import Event, Kind, Outcome, UpstreamState

DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)  # the conventions' advice
MAX_TRACKED_SESSIONS = 4096  # host sessions whose upstream generation is remembered (to count each restart once)


class Metric(StrEnum):
    """Each metric, by its OTLP instrument name (Prometheus translates them: `prometheus/collector.py` OTLP_NAME)."""

    DURATION = "mcp.client.operation.duration"  # histogram, seconds
    DEADLINES = "mcpwatch.deadlines"
    LATE_ANSWERS = "mcpwatch.late_answers"
    LATE_RESULTS = "mcpwatch.late_results"
    LATE_REUSES = "mcpwatch.late_reuses"
    UPSTREAM_RESTARTS = "mcpwatch.upstream.restarts"
    HEARTBEATS = "mcpwatch.heartbeats"
    IN_FLIGHT = "mcpwatch.calls.in_flight"  # a level: +1 and -1
    TOMBSTONES = "mcpwatch.tombstones"  # a level: +1 and -1


LEVELS = frozenset({Metric.IN_FLIGHT, Metric.TOMBSTONES})
"""Metrics that go up and down; the others only count up (or, for the duration, observe)."""


class Observation(NamedTuple):
    """One metric movement: a histogram value, or a counter's or level's delta, with what it is about (a tuple:
    made for every call's end, on the export's and the scrape's side alike)."""

    metric: Metric
    value: float = 1.0
    method: str | None = None
    tool: str | None = None
    outcome: str | None = None  # request_end: the call's; late_result: the late answer's
    what: str | None = None  # late_answers: "response" or "progress"


# Hot-path aliases: an enum member's class lookup costs about 0.2 µs a time, and each call's end reads several.
_DURATION, _IN_FLIGHT, _DEADLINES = Metric.DURATION, Metric.IN_FLIGHT, Metric.DEADLINES
_DEADLINE = Outcome.DEADLINE.value
_new = tuple.__new__  # an Observation made from a whole tuple, without NamedTuple's Python-level __new__


class MetricEvents:
    """Feed events in order; each gives the observations it makes. Remembers only each host session's last ready
    upstream generation, so a restart is counted once per host session however often its state is repeated."""

    def __init__(self, levels: bool = True) -> None:
        self.levels = levels  # False: no calls-in-flight or tombstone movements (a writer that reads them elsewhere)
        self._generations: OrderedDict[str | None, int] = OrderedDict()

    def observe(self, event: Event) -> list[Observation]:
        reading = _READINGS.get(event.kind)
        return reading(self, event) if reading is not None else []

    def _request_start(self, event: Event) -> list[Observation]:
        if not self.levels:
            return []
        method = event.data.get("method")
        return [_new(Observation, (_IN_FLIGHT, 1.0, method if isinstance(method, str) else "?", None, None, None))]

    def _request_end(self, event: Event) -> list[Observation]:
        data = event.data
        duration, outcome, method = data.get("duration_s"), data.get("outcome"), data.get("method")
        method = method if isinstance(method, str) else "?"
        outcome = outcome if isinstance(outcome, str) else None
        seconds = float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) else 0.0
        observations = [_new(Observation, (_DURATION, seconds, method, event.tool, outcome, None))]
        if self.levels:
            observations.append(_new(Observation, (_IN_FLIGHT, -1.0, method, None, None, None)))
        if outcome == _DEADLINE:
            observations.append(_new(Observation, (_DEADLINES, 1.0, None, event.tool, None, None)))
        return observations

    def _tombstone_add(self, event: Event) -> list[Observation]:
        return [Observation(Metric.TOMBSTONES, 1.0)] if self.levels else []

    def _tombstone_expire(self, event: Event) -> list[Observation]:
        return [Observation(Metric.TOMBSTONES, -1.0)] if self.levels else []

    def _tombstone_hit(self, event: Event) -> list[Observation]:
        what = _text(event.data.get("what")) or "response"
        return [Observation(Metric.LATE_ANSWERS, 1.0, None, event.tool, None, what)]

    def _late_result(self, event: Event) -> list[Observation]:
        outcome = _text(event.data.get("outcome")) or "?"
        return [Observation(Metric.LATE_RESULTS, 1.0, None, event.tool, outcome)]

    def _late_reuse(self, event: Event) -> list[Observation]:
        return [Observation(Metric.LATE_REUSES, 1.0, None, event.tool)]

    def _heartbeat(self, event: Event) -> list[Observation]:
        return [Observation(Metric.HEARTBEATS, 1.0, None, event.tool)]

    def _upstream_state(self, event: Event) -> list[Observation]:
        data = event.data
        generation, session = data.get("generation"), _text(data.get("host_session"))
        if data.get("state") != UpstreamState.READY or not isinstance(generation, int):
            return []
        seen = self._generations.get(session)
        self._generations[session] = generation
        self._generations.move_to_end(session)
        if len(self._generations) > MAX_TRACKED_SESSIONS:
            self._generations.popitem(last=False)
        restarted = generation > 1 and generation != seen
        return [Observation(Metric.UPSTREAM_RESTARTS)] if restarted else []


_READINGS: dict[str, Callable[[MetricEvents, Event], list[Observation]]] = {
    Kind.REQUEST_START: MetricEvents._request_start,
    Kind.REQUEST_END: MetricEvents._request_end,
    Kind.TOMBSTONE_ADD: MetricEvents._tombstone_add,
    Kind.TOMBSTONE_EXPIRE: MetricEvents._tombstone_expire,
    Kind.TOMBSTONE_HIT: MetricEvents._tombstone_hit,
    Kind.LATE_RESULT: MetricEvents._late_result,
    Kind.LATE_REUSE: MetricEvents._late_reuse,
    Kind.HEARTBEAT: MetricEvents._heartbeat,
    Kind.UPSTREAM_STATE: MetricEvents._upstream_state,
}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


KINDS = frozenset(_READINGS)
"""The event kinds that move a metric."""
