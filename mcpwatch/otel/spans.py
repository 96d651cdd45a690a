"""The wrapper's events → finished call spans and metric measurements, with no OpenTelemetry import.

One builder serves the live export (fed from the recorder, on the exporter's thread) and `mcpwatch export --format
otlp` (fed from the log), so a recorded session becomes the same spans it produced live, with its original times.
Names follow the OpenTelemetry MCP semantic conventions (client spans: the wrapper calls the upstream); what they do
not cover — budgets, cancels, tombstones, late answers, partial results, heartbeats — is under `mcpwatch.`.

The metrics are `mcpwatch.metrics`' observations (the reading the Prometheus scrape writes too), given the span's
attributes where a call's span has them.

A call cut by mcpwatch (deadline, cancel, upstream lost) is held for `late_window_s` after its end, so a late answer
that arrives meanwhile is recorded on the call's own span (an event after the span's end, with its delay).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from mcpwatch.events import Event, Kind, Outcome, UpstreamState
from mcpwatch.metrics import DURATION_BUCKETS, Metric, MetricEvents, Observation

__all__ = [
    "DURATION_BUCKETS",
    "DURATION_METRIC",
    "KINDS",
    "CallShape",
    "CallSpan",
    "Durations",
    "Measure",
    "PlainSpan",
    "SharedAttributes",
    "SpanBuilder",
    "session_spans",
]

AttributeValue = str | int | float | bool
DURATION_METRIC = Metric.DURATION.value
MAX_SPAN_EVENTS = 64  # progress milestones beyond this are counted, not recorded one by one
HEARTBEAT = "heartbeat"  # an event kind the wrapper emits when it keeps a host's idle clock alive

KINDS = frozenset(
    {
        Kind.SESSION_START,
        Kind.HOST_INFO,
        Kind.UPSTREAM_STATE,
        Kind.REQUEST_START,
        Kind.PROGRESS,
        Kind.REQUEST_END,
        Kind.TOMBSTONE_ADD,
        Kind.TOMBSTONE_HIT,
        Kind.TOMBSTONE_EXPIRE,
        Kind.LATE_RESULT,
        Kind.LATE_REUSE,
        Kind.TASK_CREATED,
        Kind.TASK_STATUS,
        HEARTBEAT,
    }
)
"""The event kinds the export reads; the recorder hands over only these."""

_START, _END, _OK = Kind.REQUEST_START, Kind.REQUEST_END, Outcome.OK
_OK_TEXT = "ok"  # how the plain path writes it (the same interned text): found without a comparison
_CUT = frozenset({Outcome.DEADLINE, Outcome.CANCELLED, Outcome.UPSTREAM_LOST})
_NUMBER = (int, float)
_METRIC_ATTRIBUTES = (
    "mcp.method.name",
    "gen_ai.tool.name",
    "gen_ai.operation.name",
    "error.type",
    "rpc.response.status_code",
    "network.transport",
    "mcp.protocol.version",
    "server.address",
    "server.port",
)
"""A call span's attributes its duration measurement carries."""
_CODE = re.compile(r'"code"\s*:\s*(-?\d+)')


@dataclass(slots=True)
class CallSpan:
    """One forwarded request as a CLIENT span: times in Unix nanoseconds, ids as lowercase hex."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    start_ns: int
    attributes: dict[str, AttributeValue]
    end_ns: int = 0
    events: list[tuple[str, int, dict[str, AttributeValue]]] = field(default_factory=list)
    error: str | None = None  # the status description when the call failed
    release_ns: int = 0  # a cut call is exported once this passes (or its late answer came)
    dropped_events: int = 0
    # the text its start made: held while it is open (`SpanBuilder`'s OPEN_TEXT_MAX), and its request's weight
    # (`exporter.request_chunks`); bookkeeping, not the span's
    held_text: int = field(default=0, compare=False, repr=False)

    def add_event(self, name: str, ts: float, attributes: dict[str, AttributeValue]) -> None:
        if len(self.events) < MAX_SPAN_EVENTS:
            self.events.append((name, _ns(ts), attributes))
        else:
            self.dropped_events += 1


@dataclass(slots=True, eq=False)
class CallShape:
    """What a call's span shares with every call of the same tool, method, budget and host session while the
    session's state holds: its name and its attributes but the call's own ids, split where those go (the request
    id after `head`, the upstream's id after `middle`), and its duration's attributes when it ends well. Made once
    and read only: a plain call's record points at it instead of copying it."""

    name: str
    head: dict[str, AttributeValue]
    middle: dict[str, AttributeValue]
    metric: dict[str, AttributeValue]
    # name, head and middle as span fields, and for a plain span's field (`encode.SpanEncoder.record_field`) the bytes
    # from its name to its start time's tag and the length of the bytes every such span has
    encoded: tuple[bytes, bytes, bytes, bytes, int] | None = None


@dataclass(slots=True, eq=False)
class PlainSpan:
    """A call's span with no events, no error and no held late window, as the few numbers that vary: what the live
    export keeps per call instead of a `CallSpan` and its attribute dict. `full()` is the same span as a `CallSpan`
    (a progress, task or cut call is made one as soon as it needs more)."""

    shape: CallShape
    trace_id: str
    span_id: str
    parent_span_id: str | None
    start_ns: int
    request_id: str
    up_id: int | None
    end_ns: int = 0

    def full(self) -> CallSpan:
        shape = self.shape
        attributes: dict[str, AttributeValue] = {**shape.head, "jsonrpc.request.id": self.request_id, **shape.middle}
        if self.up_id is not None:
            attributes["mcpwatch.upstream.request_id"] = self.up_id
        span = CallSpan(shape.name, self.trace_id, self.span_id, self.parent_span_id, self.start_ns, attributes)
        if self.end_ns:
            span.end_ns = self.end_ns
            attributes["mcpwatch.outcome"] = str(Outcome.OK)
        return span


PlainRecord = tuple[CallShape, str, str, str | None, int, str, int | None]
"""An open plain call as the live export holds it: `PlainSpan`'s fields to its start (shape, trace id, span id,
parent span id, start, request id, upstream id), a tuple, made in a tenth of a `PlainSpan`'s time; `PlainSpan(*record,
end_ns)` is its span, and `encode.SpanEncoder.record_field(record, end_ns)` its span's bytes."""
PlainEncode = Callable[[PlainRecord, int], bytes]
Span = CallSpan | PlainSpan | bytes
"""A finished span as the live export batches it: a plain call's may be its field's bytes already (`fold_round`)."""


class SharedAttributes(dict[str, AttributeValue]):
    """A measurement's attributes shared by many measurements (a call shape's duration attributes, a method's
    in-flight level) and never changed once made: the metric fold finds their series by `key`, made here once,
    instead of a frozenset of the attributes per measurement."""

    __slots__ = ("key",)

    def __init__(self, attributes: dict[str, AttributeValue]) -> None:
        super().__init__(attributes)
        self.key = frozenset(attributes.items())


class Measure(NamedTuple):
    """One metric observation: a histogram value or a counter/up-down-counter delta (a tuple: a few are made for
    every call, and a tuple is made in half the time of a frozen dataclass)."""

    name: str
    value: float
    attributes: dict[str, AttributeValue]


class Durations(NamedTuple):
    """Durations of one series in a row, in the order their calls ended: what a round's plain calls of one shape give
    (`SpanBuilder.fold_round`), added up at once (`metric_fold.OtlpMetricFold.record`) as one `Measure` each would
    be."""

    name: str
    values: list[float]
    attributes: SharedAttributes


Output = CallSpan | PlainSpan | Measure
SHAPES_MAX = 1024  # call shapes kept; past it the cache starts again
OPEN_MAX = 65_536
"""Calls open: a call whose end the export's full queue dropped would stay open for good, one more with each slow
collector's stall; past this the oldest request id's are forgotten (no wrapper has this many in flight). Counted by
call, not by request id: a host may reuse one id for every call."""
OPEN_TEXT_MAX = 8 << 20
"""Characters the open calls' full spans hold (a plain call's record holds its shape's, bounded by SHAPE_TEXT_MAX):
a host naming its tools or methods in tens of kilobytes, each call's end dropped, is held by bytes, not by count."""
HELD_MAX = 4096
"""Cut calls held for their late window at once: a host that cancels every call as it sends it holds one more with
each call for `late_window_s` (30 s), each with its progress events; past this the oldest is exported at once,
without waiting for its late answer (an answer that still comes is counted, not added to a span already sent)."""
METHOD_KEPT_MAX = 128
"""A method name's characters for its in-flight attributes to be kept (MCP's methods are short; a host may send
megabytes, and 1,024 of them kept would be a gigabyte)."""
SHAPE_TEXT_MAX = 1024
"""Characters of text one shape may hold (its name and attribute values): a longer one (a host naming a tool in
megabytes) is not kept, its call takes the full path, so the shapes hold at most about a megabyte of text."""


def _ns(ts: float) -> int:
    return round(ts * 1e9)


def _derived_ids(session_id: str, seq: int) -> tuple[str, str]:
    """Stable ids for a recorded call that has none (logged without export): the same trace on every export."""
    digest = hashlib.sha256(f"{session_id}/{seq}".encode()).hexdigest()
    return digest[:32], digest[32:48]


def _error_code(error: Any) -> str | None:
    match = _CODE.search(error) if isinstance(error, str) else None
    return match[1] if match else None


class SpanBuilder:
    """Fold events into spans and measurements. Feed events in order; `due` releases held cut calls.

    `lean`: a call that ends well with nothing on its span comes out as a `PlainSpan` (the live export, whose
    encoder takes them); otherwise every span is a `CallSpan`."""

    def __init__(self, late_window_s: float = 30.0, lean: bool = False) -> None:
        self.lean = lean
        self._shapes: dict[tuple[Any, ...], CallShape] = {}
        self.late_window_ns = _ns(late_window_s)
        self.common: dict[str, AttributeValue] = {}
        self.transport = "pipe"
        self.protocol_version: str | None = None
        self.host_profile: str | None = None
        self.generation = 0
        self._open: dict[str, list[CallSpan | PlainRecord]] = {}  # by host request id (two hosts may reuse one)
        self._open_calls = 0  # the calls `_open` holds (OPEN_MAX)
        self._open_text = 0  # the text their full spans hold (OPEN_TEXT_MAX)
        self._by_up_id: dict[Any, CallSpan] = {}  # cut calls waiting for a late answer
        self._up_keys: dict[int, list[Any]] = {}  # a span's keys in `_by_up_id`, by the span's id()
        # held cut calls by id(), in the order they were cut: a host cancelling each call at once holds thousands,
        # so none is found by a scan (a scan per release or late answer grew with their square)
        self._held: dict[int, CallSpan] = {}
        self._metrics = MetricEvents()
        self._ended: CallSpan | PlainSpan | None = None  # the span the event being fed ended
        self._levels: dict[str, SharedAttributes] = {}  # the in-flight level's attributes, by method

    # ------------------------------------------------------------------ feeding

    def feed(self, event: Event) -> list[Output]:
        self._ended = None
        handler = _HANDLERS.get(event.kind)
        outputs = handler(self, event, event.data) if handler is not None else []
        for seen in self._metrics.observe(event):
            outputs.append(_MEASURE[seen[0]](self, seen))  # seen[0]: its metric (a tuple index is the quickest read)
        return outputs

    def fold_round(
        self, events: Iterable[Event], encode: PlainEncode | None = None
    ) -> tuple[list[Span], list[Measure | Durations]]:
        """What `feed` gives for these events, in order, as spans and measurements; the in-flight level's moves of one
        method added up into one measurement where its first move was. A round's measurements are added to the
        metrics at once (`exporter.MetricRecorder.record_all`), so every push reads the same levels, the same series
        in the same order. A plain call is folded here with no observation in between: its start to its record when
        its shape is known, its end to its span (its bytes, with `encode`) and its duration under its shape's
        attributes, added to the `Durations` of the calls of its shape that ended just before it (no other duration
        between: a series' values stay in their order) (`tests/unit/test_otel_round_fold.py` compares both ways)."""
        spans: list[Span] = []
        measures: list[Any] = []
        levels: dict[str, list[Any]] = {}  # method → [its measurement's index, the round's total]
        last_method: Any = _NO_METHOD  # the method of the last level move and its slot: most are one method's
        last_slot: list[Any] = []
        run_shape: CallShape | None = None  # the shape whose durations `run` holds, while no other duration came
        run: list[float] = []
        opened, shapes = self._open, self._shapes
        for event in events:
            kind, data = event.kind, event.data
            if kind is _START:  # as `feed`: no output but the level's +1 (a kind of another type: `feed` reads it)
                request_id = event.request_id
                try:  # a key equal to a kept one gives the same attributes (`_shape_key` kept only valid ones)
                    method, trace_id, span_id, up_id, budget, source = _PLAIN_START(data)
                    shape = shapes.get((method, event.tool, budget, source, data.get("host_session")))
                except (KeyError, TypeError):  # a value missing or one a key cannot hold: the general way
                    method, shape = data.get("method"), None
                if (
                    shape is not None
                    and type(request_id) is str
                    and type(trace_id) is str
                    and type(span_id) is str
                    and type(up_id) is int
                    and "parent_span_id" not in data
                ):  # `_request_start`'s plain record and its `_hold_open`, inline
                    record: PlainRecord = (shape, trace_id, span_id, None, round(event.ts * 1e9), request_id, up_id)
                    waiting = opened.get(request_id)
                    if waiting is None:
                        opened[request_id] = [record]
                    else:
                        waiting.append(record)
                    self._open_calls += 1
                    if self._open_calls > OPEN_MAX:
                        self._forget_oldest()
                else:
                    self._ended = None
                    self._request_start(event, data)
                delta = 1.0
            elif (
                kind is _END and (waiting := opened.get(ended := event.request_id or "")) and type(waiting[0]) is tuple
            ):
                try:
                    outcome, duration, method = _PLAIN_END(data)
                except KeyError:
                    outcome = duration = None
                if not ((outcome is _OK_TEXT or outcome == _OK) and type(duration) is float and "partial" not in data):
                    self._fold_outputs(self.feed(event), spans, measures, levels)
                    run_shape = None  # its duration, if any, is between
                    continue
                record = waiting.pop(0)  # type: ignore[assignment]  # checked above
                if not waiting:
                    del opened[ended]
                self._open_calls -= 1
                end_ns = round(event.ts * 1e9)  # `_ns`, inline
                if end_ns < record[4]:
                    end_ns = record[4]
                spans.append(PlainSpan(*record, end_ns) if encode is None else encode(record, end_ns))
                if record[0] is run_shape:
                    run.append(duration)
                else:
                    run_shape, run = record[0], [duration]
                    measures.append(_new(Durations, (DURATION_METRIC, run, run_shape.metric)))
                delta = -1.0
            else:
                self._fold_outputs(self.feed(event), spans, measures, levels)
                run_shape = None
                continue
            if method == last_method:  # the same text: the same level (`last_method` is one already read)
                last_slot[1] += delta
                continue
            method = (method if isinstance(method, str) else None) or "?"
            slot = levels.get(method)
            if slot is None:
                slot = levels[method] = [len(measures), delta]
                measures.append(None)
            else:
                slot[1] += delta
            last_method, last_slot = method, slot
        for method, (at, total) in levels.items():
            measures[at] = _new(Measure, (_IN_FLIGHT, total, self._in_flight(method)))
        return spans, measures

    @staticmethod
    def _fold_outputs(
        outputs: list[Output], spans: list[Span], measures: list[Any], levels: dict[str, list[Any]]
    ) -> None:
        """One event's outputs into a round's (`fold_round`), its in-flight move added to its method's."""
        for output in outputs:
            if type(output) is not Measure:
                spans.append(output)  # type: ignore[arg-type]  # a span
            elif output[0] == _IN_FLIGHT:
                method = output[2]["mcp.method.name"]
                slot = levels.get(method)  # type: ignore[arg-type]  # the level's attribute is its method
                if slot is None:
                    levels[method] = [len(measures), output[1]]  # type: ignore[index]  # the method is the text just read
                    measures.append(None)
                else:
                    slot[1] += output[1]
            else:
                measures.append(output)

    def _in_flight(self, method: str) -> SharedAttributes:
        """The in-flight level's attributes for a method, made once. A host names the method: they are kept for at
        most `SHAPES_MAX` methods of at most `METHOD_KEPT_MAX` characters (a longer one is made each time)."""
        attributes = self._levels.get(method)
        if attributes is None:
            attributes = SharedAttributes({"mcp.method.name": method})
            if len(method) <= METHOD_KEPT_MAX:
                if len(self._levels) >= SHAPES_MAX:
                    self._levels.clear()
                self._levels[method] = attributes
        return attributes

    def _duration_attributes(self, seen: Observation) -> dict[str, AttributeValue]:
        span = self._ended
        if type(span) is PlainSpan:
            return span.shape.metric
        if span is None:  # a call whose start this builder never saw: what the end itself says
            attributes: dict[str, AttributeValue] = {"mcp.method.name": seen.method or "?"}
            if seen.method == "tools/call" and seen.tool:
                attributes |= {"gen_ai.tool.name": seen.tool, "gen_ai.operation.name": "execute_tool"}
            return attributes
        return _metric_attributes(span.attributes)  # type: ignore[union-attr]  # a CallSpan: PlainSpan is above

    def due(self, now_ts: float) -> list[CallSpan]:
        """Held cut calls whose late window has passed."""
        now = _ns(now_ts)
        ready = [span for span in self._held.values() if span.release_ns <= now]
        if ready:
            self._release(ready)
        return ready

    def holding(self) -> bool:
        """Whether cut calls wait for their late window (the export thread must look again for them)."""
        return bool(self._held)

    def drain(self) -> list[CallSpan]:
        """Everything still held (shutdown, or the end of a recorded session)."""
        ready, self._held = list(self._held.values()), {}
        self._by_up_id.clear()
        self._up_keys.clear()
        return ready

    def _release(self, spans: list[CallSpan]) -> None:
        for span in spans:
            del self._held[id(span)]
            self._forget_up_ids(span)

    def _forget_up_ids(self, span: CallSpan) -> None:
        """No late answer is waited for on this span any more: its keys leave `_by_up_id` (those still its own)."""
        for key in self._up_keys.pop(id(span), ()):
            if self._by_up_id.get(key) is span:
                del self._by_up_id[key]

    # ------------------------------------------------------------------ handlers

    def _session_start(self, event: Event, data: dict[str, Any]) -> list[Output]:
        upstream = got if isinstance(got := data.get("upstream"), dict) else {}
        self._shapes.clear()
        self.common = {"mcpwatch.wrapper.name": str(data.get("name") or "mcpwatch")}
        self.transport = "pipe"
        if upstream.get("kind") == "http":
            from urllib.parse import urlsplit

            self.transport = "tcp"
            parts = urlsplit(str(upstream.get("target") or ""))
            if parts.hostname:
                self.common["server.address"] = parts.hostname
                self.common["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        return []

    def _host_info(self, event: Event, data: dict[str, Any]) -> list[Output]:
        self._shapes.clear()
        if isinstance(data.get("protocol_version"), str):
            self.protocol_version = data["protocol_version"]
        profile = data.get("profile")
        name = profile.get("name") if isinstance(profile, dict) else profile
        self.host_profile = name if isinstance(name, str) else None
        return []

    def _upstream_state(self, event: Event, data: dict[str, Any]) -> list[Output]:
        generation = data.get("generation")
        if isinstance(generation, int) and data.get("state") == UpstreamState.READY:
            self.generation = generation  # the spans' attribute; restarts are counted by mcpwatch.metrics
            self._shapes.clear()
        return []

    def _request_start(self, event: Event, data: dict[str, Any]) -> list[Output]:
        get, tool, request_id = data.get, event.tool, event.request_id  # read once: this runs for every call
        trace_id, span_id = get("trace_id"), get("span_id")
        if not (isinstance(trace_id, str) and isinstance(span_id, str)):
            trace_id, span_id = _derived_ids(event.session_id, event.seq)
        parent = get("parent_span_id")
        parent = parent if isinstance(parent, str) else None
        up_id = get("up_id")
        up_id = up_id if isinstance(up_id, int) else None
        if self.lean and tool is not None and isinstance(request_id, str):
            key = _shape_key(get("method"), tool, get("budget_s"), get("budget_source"), get("host_session"))
            shape = None if key is None else self._shapes.get(key) or self._shape(key)
            if shape is not None:
                record = (shape, trace_id, span_id, parent, round(event.ts * 1e9), request_id, up_id)
                self._hold_open(request_id, record)
                return []
        method = str(get("method") or "?")
        target = tool if tool is not None else get("prompt")
        attributes = self._attributes(
            method, tool, request_id, get("host_session"), get("budget_s"), get("budget_source"), up_id
        )
        name = f"{method} {target}" if target else method
        span = CallSpan(name, trace_id, span_id, parent, _ns(event.ts), attributes)
        span.held_text = len(name) + sum(len(value) for value in attributes.values() if type(value) is str)
        self._hold_open(request_id or "", span, span.held_text)
        return []

    def _hold_open(self, request_id: str, call: CallSpan | PlainRecord, text: int = 0) -> None:
        """Keep a call open under its request id, the oldest forgotten past OPEN_MAX calls or OPEN_TEXT_MAX
        characters (`fold_round` does this inline for a plain call's record)."""
        self._open.setdefault(request_id, []).append(call)
        self._open_calls += 1
        self._open_text += text
        while self._open and (self._open_calls > OPEN_MAX or self._open_text > OPEN_TEXT_MAX):
            self._forget_oldest()

    def _forget_oldest(self) -> None:
        """Drop the calls of the request id open longest: past `OPEN_MAX` (or `OPEN_TEXT_MAX`), their ends were lost
        (a full queue drops events while a slow collector holds the thread), and calls open that long would never
        end here."""
        forgotten = self._open.pop(next(iter(self._open)))
        self._open_calls -= len(forgotten)
        self._open_text -= sum(span.held_text for span in forgotten if type(span) is CallSpan)
        if self._up_keys:  # a forgotten call's end never comes: no late answer is waited for
            for span in forgotten:
                if type(span) is CallSpan:
                    self._forget_up_ids(span)

    def _attributes(
        self,
        method: str,
        tool: str | None,
        request_id: str | None,
        host_session: Any,
        budget: Any,
        source: Any,
        up_id: int | None,
    ) -> dict[str, AttributeValue]:
        """A call span's attributes at its start, in the order a span lists them."""
        attributes: dict[str, AttributeValue] = {**self.common, "mcp.method.name": method}
        attributes["network.transport"] = self.transport
        if request_id is not None:
            attributes["jsonrpc.request.id"] = request_id
        if self.protocol_version:
            attributes["mcp.protocol.version"] = self.protocol_version
        if isinstance(host_session, str) and host_session:
            attributes["mcp.session.id"] = host_session
        if method == "tools/call" and tool is not None:
            attributes["gen_ai.tool.name"] = tool
            attributes["gen_ai.operation.name"] = "execute_tool"
        if isinstance(budget, _NUMBER):
            attributes["mcpwatch.budget_s"] = float(budget)
        if isinstance(source, str):
            attributes["mcpwatch.budget_source"] = source
        if self.host_profile:
            attributes["mcpwatch.host_profile"] = self.host_profile
        if self.generation:
            attributes["mcpwatch.generation"] = self.generation
        if up_id is not None:
            attributes["mcpwatch.upstream.request_id"] = up_id
        return attributes

    def _shape(self, key: tuple[Any, ...]) -> CallShape | None:
        """The shape of the calls with this key, made from the attributes a full span of one would have (None: its
        text is past `SHAPE_TEXT_MAX`, the call is not plain)."""
        method, tool, budget, source, host_session = key
        if len(tool) > SHAPE_TEXT_MAX:  # checked first: the rest would copy it
            return None
        method = str(method or "?")
        attributes = self._attributes(method, tool, _SPLIT, host_session, budget, source, None)
        keys = list(attributes)
        split = keys.index("jsonrpc.request.id")
        head = {k: attributes[k] for k in keys[:split]}
        middle = {k: attributes[k] for k in keys[split + 1 :]}
        text = len(method) + sum(len(value) for value in attributes.values() if type(value) is str)
        if text + len(tool) > SHAPE_TEXT_MAX:
            return None
        metric = SharedAttributes(_metric_attributes(attributes))
        if len(self._shapes) >= SHAPES_MAX:
            self._shapes.clear()
        shape = self._shapes[key] = CallShape(f"{method} {tool}" if tool else method, head, middle, metric)
        return shape

    def _span_of(self, event: Event) -> CallSpan | None:
        """The open span an event adds to (made a `CallSpan` now if it was a plain record: it will have more)."""
        spans = self._open.get(event.request_id or "")
        if not spans:
            return None
        span = spans[-1]
        if type(span) is tuple:
            span = spans[-1] = PlainSpan(*span).full()
        return span  # type: ignore[return-value]  # a CallSpan now

    def _progress(self, event: Event, data: dict[str, Any]) -> list[Output]:
        span = self._span_of(event)
        if span is not None:
            attributes = {k: data[k] for k in ("progress", "total") if isinstance(data.get(k), int | float)}
            if isinstance(data.get("message"), str):
                attributes["message"] = data["message"][:256]
            span.add_event("mcpwatch.progress", event.ts, attributes)
        return []

    def _task(self, event: Event, data: dict[str, Any]) -> list[Output]:
        """A call that runs as an MCP task is one span to its terminal status; each status change is an event."""
        span = self._span_of(event)
        if span is not None:
            if event.kind == Kind.TASK_CREATED:
                span.attributes["mcpwatch.task.id"] = str(data.get("task_id"))
            attributes: dict[str, AttributeValue] = {"mcpwatch.task.status": str(data.get("status"))}
            if isinstance(data.get("status_message"), str):
                attributes["mcpwatch.task.status_message"] = data["status_message"][:256]
            span.add_event(f"mcpwatch.{event.kind}", event.ts, attributes)
        return []

    def _heartbeat(self, event: Event, data: dict[str, Any]) -> list[Output]:
        span = self._span_of(event)
        if span is not None:
            span.add_event("mcpwatch.heartbeat", event.ts, {})
        return []

    def _tombstone_add(self, event: Event, data: dict[str, Any]) -> list[Output]:
        span = self._span_of(event)
        attributes: dict[str, AttributeValue] = {"mcpwatch.reason": str(data.get("reason") or "")}
        if isinstance(data.get("ttl_s"), int | float):
            attributes["mcpwatch.tombstone.ttl_s"] = float(data["ttl_s"])
        if span is not None:
            span.add_event("mcpwatch.cancel_sent", event.ts, {"mcpwatch.reason": attributes["mcpwatch.reason"]})
            span.add_event("mcpwatch.tombstone", event.ts, attributes)
            if "up_id" in data:
                key = (data.get("host_session"), data["up_id"])
                self._by_up_id[key] = span
                self._up_keys.setdefault(id(span), []).append(key)
        return []

    def _tombstone_hit(self, event: Event, data: dict[str, Any]) -> list[Output]:
        """A late response (or progress) for a cut call: counted; a response also ends the call's wait."""
        what = str(data.get("what") or "response")
        outputs: list[Output] = []
        span = self._by_up_id.get((data.get("host_session"), data.get("up_id")))
        if span is not None and what == "response":
            attributes: dict[str, AttributeValue] = {}
            if isinstance(data.get("age_s"), int | float):
                attributes["mcpwatch.late.delay_s"] = float(data["age_s"])  # the tombstone's age: time since the cut
            span.add_event("mcpwatch.late_answer", event.ts, attributes)
            if id(span) in self._held:
                self._release([span])  # nothing more to wait for
                outputs.append(span)
        return outputs

    def _request_end(self, event: Event, data: dict[str, Any]) -> list[Output]:
        spans = self._open.get(event.request_id or "")
        if not spans:
            return []
        opened = spans.pop(0)
        if not spans:
            del self._open[event.request_id or ""]
        self._open_calls -= 1
        record: CallSpan | PlainSpan
        if type(opened) is tuple:
            record = PlainSpan(*opened)
        else:
            self._open_text -= opened.held_text  # type: ignore[union-attr]  # a CallSpan
            record = opened  # type: ignore[assignment]  # a CallSpan
        outcome = data.get("outcome")
        if type(record) is PlainSpan:
            record.end_ns = max(record.start_ns, _ns(event.ts))
            if outcome == Outcome.OK and not data.get("partial"):
                self._ended = record
                return [record]  # nothing on it: left plain, never held (never cut)
            span = record.full()
        else:
            span = record  # type: ignore[assignment]  # a CallSpan
        span.end_ns = max(span.start_ns, _ns(event.ts))
        attributes = span.attributes
        attributes["mcpwatch.outcome"] = str(outcome)
        error = data.get("error")
        if outcome == Outcome.DEADLINE:
            attributes["error.type"] = "timeout"
            attributes["rpc.response.status_code"] = "DEADLINE_EXCEEDED"
            span.error = f"cut at its deadline budget ({attributes.get('mcpwatch.budget_s', '?')} s)"
        elif outcome == Outcome.TOOL_ERROR:
            attributes["error.type"] = "tool_error"
            span.error = "the tool returned isError"
        elif outcome == Outcome.ERROR:
            code = _error_code(error)
            attributes["error.type"] = code or "_OTHER"
            if code:
                attributes["rpc.response.status_code"] = code
            span.error = str(error)[:512] if error else "error"
        elif outcome in (Outcome.CANCELLED, Outcome.UPSTREAM_LOST):
            attributes["error.type"] = str(outcome)
            span.error = str(error)[:512] if error else str(outcome)
        if data.get("partial"):
            span.add_event("mcpwatch.partial_result", event.ts, {})
        self._ended = span
        outputs: list[Output] = []
        if outcome in _CUT and any(name == "mcpwatch.tombstone" for name, _, _ in span.events):
            span.release_ns = span.end_ns + self.late_window_ns
            held = self._held
            held[id(span)] = span
            if len(held) > HELD_MAX:  # the oldest goes now (the dict keeps the order they were held in)
                oldest = held[next(iter(held))]
                self._release([oldest])
                outputs.append(oldest)
        else:
            if self._up_keys:  # most calls were never cut: nothing to forget
                self._forget_up_ids(span)
            outputs.append(span)
        return outputs


_HANDLERS = {
    Kind.SESSION_START: SpanBuilder._session_start,
    Kind.HOST_INFO: SpanBuilder._host_info,
    Kind.UPSTREAM_STATE: SpanBuilder._upstream_state,
    Kind.REQUEST_START: SpanBuilder._request_start,
    Kind.PROGRESS: SpanBuilder._progress,
    Kind.REQUEST_END: SpanBuilder._request_end,
    Kind.TOMBSTONE_ADD: SpanBuilder._tombstone_add,
    Kind.TOMBSTONE_HIT: SpanBuilder._tombstone_hit,
    Kind.TASK_CREATED: SpanBuilder._task,
    Kind.TASK_STATUS: SpanBuilder._task,
    HEARTBEAT: SpanBuilder._heartbeat,
}


_PLAIN_START = itemgetter("method", "trace_id", "span_id", "up_id", "budget_s", "budget_source")
"""What a plain call's `request_start` holds (`wrapper.calls.pending.PendingTable.plain_started`), read at once."""
_PLAIN_END = itemgetter("outcome", "duration_s", "method")
"""What a plain call's `request_end` holds (`PendingTable.plain_finish`), read at once."""
_NO_METHOD = object()  # no level moved yet in a round: equal to no method
_SPLIT = "\0"  # where a shape's request id goes (a placeholder: no request id is this one character)


def _shape_key(method: Any, tool: str, budget: Any, source: Any, host_session: Any) -> tuple[Any, ...] | None:
    """What a call's shape depends on besides the builder's own state, or None for values a key cannot hold
    (a shape is for the common case; an odd one takes the full path)."""
    if not (
        type(method) is str
        and type(tool) is str
        and (budget is None or type(budget) in (int, float))
        and (source is None or type(source) is str)
        and (host_session is None or type(host_session) is str)
    ):
        return None
    return (method, tool, budget, source, host_session)


def _metric_attributes(attributes: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
    return {k: attributes[k] for k in _METRIC_ATTRIBUTES if k in attributes}


def _tool(seen: Observation) -> dict[str, AttributeValue]:
    return {"gen_ai.tool.name": seen.tool} if seen.tool else {}


_IN_FLIGHT, _DEADLINES, _LATE_ANSWERS = Metric.IN_FLIGHT.value, Metric.DEADLINES.value, Metric.LATE_ANSWERS.value
_LATE_RESULTS, _LATE_REUSES = Metric.LATE_RESULTS.value, Metric.LATE_REUSES.value
_RESTARTS, _HEARTBEATS, _TOMBSTONES = Metric.UPSTREAM_RESTARTS.value, Metric.HEARTBEATS.value, Metric.TOMBSTONES.value
_new = tuple.__new__  # a Measure from a whole tuple, without NamedTuple's Python-level __new__ (each call's two)
_MEASURE: dict[Metric, Callable[[SpanBuilder, Observation], Measure]] = {
    Metric.DURATION: lambda b, seen: _new(Measure, (DURATION_METRIC, seen[1], b._duration_attributes(seen))),
    Metric.IN_FLIGHT: lambda b, seen: _new(Measure, (_IN_FLIGHT, seen[1], b._in_flight(seen[2] or "?"))),
    Metric.DEADLINES: lambda _, seen: Measure(_DEADLINES, seen.value, _tool(seen)),
    Metric.LATE_ANSWERS: lambda _, seen: Measure(
        _LATE_ANSWERS, seen.value, {**_tool(seen), "mcpwatch.late.what": seen.what or "response"}
    ),
    Metric.LATE_RESULTS: lambda _, seen: Measure(
        _LATE_RESULTS, seen.value, {**_tool(seen), "mcpwatch.outcome": seen.outcome or "?"}
    ),
    Metric.LATE_REUSES: lambda _, seen: Measure(_LATE_REUSES, seen.value, _tool(seen)),
    Metric.UPSTREAM_RESTARTS: lambda _, seen: Measure(_RESTARTS, seen.value, {}),
    Metric.HEARTBEATS: lambda _, seen: Measure(_HEARTBEATS, seen.value, {}),
    Metric.TOMBSTONES: lambda _, seen: Measure(_TOMBSTONES, seen.value, {}),
}
"""Each observation as an OTLP measurement, with the attributes the conventions give it."""


def session_spans(events: list[Event] | Any, late_window_s: float = 30.0) -> list[CallSpan]:
    """Every finished call span of a recorded session, in the order they ended (for `export --format otlp`)."""
    builder = SpanBuilder(late_window_s)
    spans: list[CallSpan] = []
    for event in events:
        spans.extend(o for o in builder.feed(event) if isinstance(o, CallSpan))
        spans.extend(builder.due(event.ts))
    spans.extend(builder.drain())
    return spans
