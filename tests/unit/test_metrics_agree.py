"""The OpenTelemetry export and the Prometheus scrape write the same numbers: one stream of events, fed to both,
gives every counter and the duration histogram the same totals (by tool where both label by tool). Both read
`mcpwatch.metrics`; before, each folded events on its own and two host sessions that each restarted their
upstream once were one restart to OpenTelemetry and two to Prometheus."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mcpwatch.events import Event, Kind
from mcpwatch.metrics import Metric, MetricEvents
from mcpwatch.otel.spans import Measure, SpanBuilder
from mcpwatch.prometheus.collector import OTLP_NAME
from mcpwatch.prometheus.endpoint import metrics_registry
from mcpwatch.prometheus.fold import MetricFold

TOOLS = ("search", "slow")
STATUS: dict[str, Any] = {"in_flight": [], "tombstones": {"count": 0}, "log": {}, "otel": {}}


class Stream:
    """Events as a wrapper with an HTTP front records them: every one carries its host session."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ts = 1000.0

    def add(self, kind: str, session: str, rid: str | None = None, tool: str | None = None, **data: Any) -> None:
        self.ts += 0.5
        request_id = f"{session}/{rid}" if rid is not None else None
        data = {"host_session": session, **data}
        self.events.append(Event(kind, "sess", self.ts, self.ts, len(self.events), request_id, tool, None, data))

    def call(self, session: str, rid: str, tool: str, outcome: str, seconds: float, up_id: int) -> None:
        self.add(Kind.REQUEST_START, session, rid, tool, method="tools/call", up_id=up_id, budget_s=50.0)
        if outcome == "deadline":
            tombstone = {"up_id": up_id, "ttl_s": 90.0, "reason": "deadline", "expires_mono": 0.0}
            self.add(Kind.TOMBSTONE_ADD, session, rid, tool, **tombstone)
        self.add(Kind.REQUEST_END, session, rid, tool, method="tools/call", outcome=outcome, duration_s=seconds)


def two_sessions_each_restarting_once() -> list[Event]:
    stream = Stream()
    stream.add(Kind.SESSION_START, "a", name="w1", upstream={"kind": "stdio", "target": "srv"})
    for session in ("a", "b"):
        stream.add(Kind.UPSTREAM_STATE, session, state="connecting", generation=1)
        stream.add(Kind.UPSTREAM_STATE, session, state="ready", generation=1)
    stream.call("a", "1", "search", "ok", 0.03, 1)
    stream.call("b", "1", "slow", "deadline", 50.0, 1)  # both hosts use id 1: two calls
    stream.add(Kind.TOMBSTONE_HIT, "b", None, "slow", up_id=1, what="progress", age_s=1.0)
    stream.add(Kind.TOMBSTONE_HIT, "b", None, "slow", up_id=1, what="response", age_s=4.0)
    stream.add(Kind.LATE_RESULT, "b", "1", "slow", outcome="ok", delay_s=4.0, size_bytes=10)
    stream.add(Kind.HEARTBEAT, "a", "1", "search")
    for session in ("a", "b"):  # each host session's upstream dies and comes back once
        stream.add(Kind.UPSTREAM_STATE, session, state="backoff", generation=1, retry_in_s=0.5)
        stream.add(Kind.UPSTREAM_STATE, session, state="ready", generation=2)
    stream.add(Kind.UPSTREAM_STATE, "a", state="ready", generation=2)  # said again: still the one restart
    stream.call("a", "2", "slow", "deadline", 50.0, 2)
    stream.call("b", "2", "search", "tool_error", 1.5, 2)
    stream.call("a", "3", "search", "ok", 7.0, 3)
    stream.add(Kind.LATE_REUSE, "a", "4", "slow", request_id_of_late="a/2")
    stream.add(Kind.TOMBSTONE_EXPIRE, "b", None, None, up_id=1, age_s=90.0)
    return stream.events


Totals = dict[tuple[str, str], float]  # (OTLP instrument name, tool or "") → total; the histogram: count and sum


def otel_totals(events: list[Event]) -> Totals:
    builder = SpanBuilder()
    measures = [out for event in events for out in builder.feed(event) if isinstance(out, Measure)]
    totals: Totals = defaultdict(float)
    for measure in measures:
        tool = str(measure.attributes.get("gen_ai.tool.name", ""))
        if measure.name == Metric.DURATION:
            totals[("duration.count", tool)] += 1
            totals[("duration.sum", tool)] += measure.value
        elif measure.name not in (Metric.IN_FLIGHT, Metric.TOMBSTONES):  # levels: read from status by a scrape
            totals[(measure.name, tool)] += measure.value
    return dict(totals)


def prometheus_totals(events: list[Event]) -> Totals:
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": name} for name in TOOLS]})
    for event in events:
        fold.emit(event)
    text = generate_latest(metrics_registry("w1", fold, lambda: STATUS)).decode()
    totals: Totals = defaultdict(float)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            tool = sample.labels.get("tool", "")
            if sample.name == "mcp_client_operation_duration_seconds_count":
                totals[("duration.count", tool)] += sample.value
            elif sample.name == "mcp_client_operation_duration_seconds_sum":
                totals[("duration.sum", tool)] += sample.value
            elif (otlp := OTLP_NAME.get(sample.name)) is not None and otlp not in (Metric.IN_FLIGHT, Metric.TOMBSTONES):
                totals[(otlp, tool)] += sample.value
    # every listed tool's counters start at 0 in the exposition; OTLP sends no series before its first count
    return {key: total for key, total in totals.items() if total}


def test_otel_and_prometheus_agree_on_every_total_of_one_stream() -> None:
    events = two_sessions_each_restarting_once()
    otel, prometheus = otel_totals(events), prometheus_totals(events)
    assert otel == pytest.approx(prometheus)  # sums of the same durations, added in another order
    assert otel[(Metric.UPSTREAM_RESTARTS, "")] == 2  # each host session's upstream restarted once
    assert otel[("duration.count", "search")] == 3 and otel[("duration.count", "slow")] == 2
    assert otel[(Metric.DEADLINES, "slow")] == 2 and otel[(Metric.LATE_ANSWERS, "slow")] == 2
    assert otel[(Metric.LATE_RESULTS, "slow")] == 1 and otel[(Metric.LATE_REUSES, "slow")] == 1
    assert otel[(Metric.HEARTBEATS, "")] == 1
    names = {name for name, _ in otel} - {"duration.count", "duration.sum"}
    assert names == {m.value for m in Metric} - {Metric.DURATION, Metric.IN_FLIGHT, Metric.TOMBSTONES}


def test_a_restart_counts_once_per_host_session() -> None:
    def ready(session: str | None, generation: int) -> Event:
        data: dict[str, Any] = {"state": "ready", "generation": generation}
        if session is not None:
            data["host_session"] = session
        return Event(Kind.UPSTREAM_STATE, "s", 0.0, 0.0, 0, None, None, None, data)

    metrics = MetricEvents()
    said = [ready(None, 1), ready(None, 2), ready(None, 2), ready("a", 2), ready("b", 2), ready("a", 3), ready(None, 3)]
    assert [len(metrics.observe(event)) for event in said] == [0, 1, 0, 1, 1, 1, 1]
