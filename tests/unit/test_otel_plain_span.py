"""A plain call's span kept as a `PlainSpan` (its shape shared, only its ids and times its own) is, to the collector
and to the metrics, exactly the `CallSpan` the full fold makes: the same request bytes, the same measurements, for
every kind of call, in any order, across changes of the session's state that the shared shape rests on."""

from __future__ import annotations

import random
from typing import Any

import pytest
from heap import bytes_held

from mcpwatch.events import Event, Kind
from mcpwatch.otel.encode import SpanEncoder
from mcpwatch.otel.spans import HEARTBEAT, CallSpan, Measure, PlainSpan, SpanBuilder, session_spans

RESOURCE = {"service.name": "mcpwatch", "service.version": "1"}


class Session:
    """Events as a wrapper makes them, numbered in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ts = 1000.0

    def add(self, kind: str, rid: str | None = None, tool: str | None = None, **data: Any) -> None:
        self.ts += 0.001
        self.events.append(Event(kind, "s1", self.ts, self.ts, len(self.events) + 1, rid, tool, None, data))

    @classmethod
    def begun(cls) -> Session:
        """A stdio wrapper's session, begun."""
        session = cls()
        session.add(Kind.SESSION_START, name="w", upstream={"kind": "stdio"})
        return session

    def start(self, rid: str, tool: str | None = "noop", **data: Any) -> None:
        """A call's start as the plain path writes it (with its budget's source), but every third without it."""
        ids = {"trace_id": f"{len(self.events) + 1:032x}", "span_id": f"{len(self.events) + 1:016x}"}
        source = {"budget_source": "derived"} if len(self.events) % 3 else {}
        self.add(Kind.REQUEST_START, rid, tool, **{"method": "tools/call", "budget_s": 55.0, **source, **ids, **data})

    def end(self, rid: str, tool: str | None = "noop", outcome: str = "ok", **data: Any) -> None:
        self.add(Kind.REQUEST_END, rid, tool, outcome=outcome, duration_s=0.001, method="tools/call", **data)


def _mixed() -> list[Event]:
    s = Session.begun()
    s.add(Kind.HOST_INFO, protocol_version="2025-06-18", profile={"name": "claude-code"})
    for n in range(3):  # plain calls, two tools, one budget source
        s.start(f"p{n}", "noop" if n % 2 else "echo", up_id=n, budget_source="default")
        s.end(f"p{n}", "noop" if n % 2 else "echo")
    s.start("same", up_id=10, host_session="h1")  # two hosts' calls with one id, overlapping
    s.start("same", up_id=11, host_session="h2")
    s.end("same")
    s.end("same")
    s.start("prog", up_id=12, parent_span_id="00f067aa0ba902b7")
    s.add(Kind.PROGRESS, "prog", "noop", progress=1, total=2, message="half")  # more than a plain span holds
    s.end("prog")
    s.start("beat", up_id=13)
    s.add(HEARTBEAT, "beat", "noop")
    s.end("beat")
    s.start("bad", up_id=14)
    s.end("bad", outcome="error", error='{"code": -32001, "message": "x"}')
    s.start("toolerr", up_id=15)
    s.end("toolerr", outcome="tool_error")
    s.start("part", up_id=16)
    s.end("part", partial=True)
    s.start("cut", up_id=17, budget_s=0.5)
    s.add(Kind.TOMBSTONE_ADD, "cut", "noop", reason="deadline", ttl_s=30.0, up_id=17)
    s.end("cut", outcome="deadline")
    s.add(Kind.TOMBSTONE_HIT, None, "noop", what="response", up_id=17, age_s=1.0)
    s.start("task", up_id=18)
    s.add(Kind.TASK_CREATED, "task", "noop", task_id="t1", status="working")
    s.end("task")
    s.add(Kind.HOST_INFO, protocol_version="2025-11-25", profile="cursor")  # the shape's state changes
    s.start("after-host", up_id=19)
    s.end("after-host")
    s.add(Kind.UPSTREAM_STATE, state="ready", generation=2)
    s.start("after-restart", up_id=20)
    s.end("after-restart")
    s.add(Kind.SESSION_START, name="other", upstream={"kind": "http", "target": "https://x.test:8443/mcp"})
    s.start("after-session", up_id=21)
    s.end("after-session")
    s.start("odd-budget", up_id=22, budget_s=True, budget_source=5, host_session=["not", "text"])
    s.end("odd-budget")
    s.start("no-up-id")
    s.end("no-up-id")
    s.start("big-up-id", up_id=2**40, method="tools/call")
    s.end("big-up-id")
    s.start("prompt", None, method="prompts/get", prompt="greet", up_id=23)
    s.end("prompt", None)
    s.start("", "", up_id=24, method="")  # empty id, tool and method
    s.end("", "")
    s.end("never-started")
    return s.events


def _fold(events: list[Event], lean: bool) -> tuple[list[CallSpan | PlainSpan], list[Measure]]:
    builder = SpanBuilder(lean=lean)
    spans: list[CallSpan | PlainSpan] = []
    measures: list[Measure] = []
    for event in events:
        for output in builder.feed(event):
            (measures if isinstance(output, Measure) else spans).append(output)  # type: ignore[arg-type]
    spans.extend(builder.drain())
    return spans, measures


def _full(span: CallSpan | PlainSpan) -> CallSpan:
    return span.full() if isinstance(span, PlainSpan) else span


def test_the_lean_fold_gives_the_full_folds_spans_measures_and_bytes() -> None:
    events = _mixed()
    full, full_measures = _fold(events, lean=False)
    lean, lean_measures = _fold(events, lean=True)
    assert all(isinstance(s, CallSpan) for s in full)
    plain = [s for s in lean if isinstance(s, PlainSpan)]
    assert len(plain) >= 10 and len(lean) - len(plain) >= 6  # both kinds were made: the comparison means something
    assert [_full(s) for s in lean] == full
    assert lean_measures == full_measures
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    assert encoder.request(lean) == encoder.request(full)
    assert SpanEncoder(RESOURCE, "mcpwatch", "1").request(lean) == encoder.request(full)  # a fresh encoder alike


@pytest.mark.parametrize("seed", range(5))
def test_interleaved_calls_in_any_order_fold_alike(seed: int) -> None:
    """Many calls open at once, ids reused, state changing in between: the lean fold still matches."""
    rng = random.Random(seed)
    s = Session.begun()
    open_ids: list[str] = []
    for n in range(300):
        roll = rng.random()
        if roll < 0.45 or not open_ids:
            rid = str(rng.randrange(20))  # ids reused while open
            tool = rng.choice(["a", "b", "c"])
            s.start(rid, tool, up_id=n, host_session=rng.choice([None, "h1", "h2"]), budget_s=rng.choice([5, 55.0]))
            open_ids.append(rid)
        elif roll < 0.9:
            rid = open_ids.pop(rng.randrange(len(open_ids)))
            s.end(rid, outcome=rng.choice(["ok", "ok", "ok", "error", "tool_error"]))
        elif roll < 0.95:
            s.add(Kind.PROGRESS, rng.choice(open_ids), None, progress=n)
        else:
            s.add(Kind.HOST_INFO, protocol_version=rng.choice(["2025-06-18", "2025-11-25"]))
    full, full_measures = _fold(s.events, lean=False)
    lean, lean_measures = _fold(s.events, lean=True)
    assert [_full(x) for x in lean] == full and lean_measures == full_measures
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    assert encoder.request(lean) == encoder.request(full)


def test_a_recorded_session_is_exported_as_full_spans() -> None:
    assert all(isinstance(s, CallSpan) for s in session_spans(_mixed()))  # `export --format otlp`: not lean


def test_the_shapes_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpwatch.otel import spans

    monkeypatch.setattr(spans, "SHAPES_MAX", 8)
    s = Session()
    for n in range(100):  # a host naming a new tool with every call
        s.start(str(n), f"tool{n}", up_id=n)
        s.end(str(n), f"tool{n}")
    builder = SpanBuilder(lean=True)
    for event in s.events:
        builder.feed(event)
    assert 0 < len(builder._shapes) <= 8


def _calls(tools: list[str]) -> list[Event]:
    s = Session.begun()
    s.add(Kind.HOST_INFO, protocol_version="2025-06-18")
    for n, tool in enumerate(tools):
        s.start(str(n), tool, up_id=n)
        s.end(str(n), tool)
    return s.events


@pytest.mark.parametrize("lean", [True, False])
def test_a_name_that_is_not_unicode_reaches_the_collector_as_utf8(lean: bool) -> None:
    """A host may name a tool with a lone surrogate (legal JSON): a proto3 string must be UTF-8, or the collector
    refuses the whole batch, every other call's span with it."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    tools = ["fine", "\ud800", "a\udfffb", "\ud83d\ude00", "nul\x00esc\x1b[31m", "\u202eflip"]
    spans, _ = _fold(_calls(tools), lean=lean)
    body = SpanEncoder(RESOURCE, "mcp\udc80watch", "1").request(spans)
    parsed = ExportTraceServiceRequest()
    parsed.ParseFromString(body)
    names = [span.name for span in parsed.resource_spans[0].scope_spans[0].spans]
    expected = ["fine", "\ufffd", "a\ufffdb", "\U0001f600", "nul\x00esc\x1b[31m", "\u202eflip"]
    assert names == [f"tools/call {tool}" for tool in expected]
    assert parsed.resource_spans[0].scope_spans[0].scope.name == "mcp\ufffdwatch"


def test_huge_tool_names_fold_alike_and_are_not_kept() -> None:
    """A host naming a new tool in 128 KiB with every call: the lean fold still matches the full one, and neither
    the shapes nor the encoder's cache keeps the names (they were 40 and 16 MiB for 48 calls)."""
    tools = [f"{n:03d}" + "x" * 128 * 1024 for n in range(48)]
    events = _calls(tools)
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    full, _ = _fold(events, lean=False)
    lean, _ = _fold(events, lean=True)
    assert encoder.request(lean) == encoder.request(full)
    del full, lean
    for lean_fold in (True, False):
        builder, encoder = SpanBuilder(lean=lean_fold), SpanEncoder(RESOURCE, "mcpwatch", "1")

        def encoded(builder: SpanBuilder = builder, encoder: SpanEncoder = encoder) -> None:
            for event in events:
                encoder.request([out for out in builder.feed(event) if not isinstance(out, Measure)])

        kept = bytes_held(encoded)
        assert kept < 2 * 2**20, (lean_fold, kept)


@pytest.mark.parametrize("lean", [True, False])
def test_calls_whose_end_was_dropped_are_not_kept_for_good(lean: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a slow collector holds the export thread the queue fills and drops events, ends among them: each such
    call stayed open in the fold for the wrapper's life. Past OPEN_MAX the oldest is forgotten; the newest still
    end as spans."""
    from mcpwatch.otel import spans

    monkeypatch.setattr(spans, "OPEN_MAX", 8, raising=False)
    s = Session()
    for n in range(100):  # no end reached the fold
        s.start(f"lost{n}", up_id=n)
    for n in range(96, 100):
        s.end(f"lost{n}")
    builder = SpanBuilder(lean=lean)
    ended = [out for event in s.events for out in builder.feed(event) if not isinstance(out, Measure)]
    assert len(builder._open) <= 8
    assert [_full(span).attributes["jsonrpc.request.id"] for span in ended] == [f"lost{n}" for n in range(96, 100)]
