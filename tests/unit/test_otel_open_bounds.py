"""The calls the export holds open (`SpanBuilder`) and the requests it sends, attacked by hosts and upstreams while a
stalled collector makes the export's full queue drop events: a call whose end was dropped stays open until it is
forgotten. Held by bytes, not by request ids: a host reusing one id for every call, or naming its tools in tens of
kilobytes, must not grow what the export keeps for as long as the wrapper runs, nor what one request holds; an
upstream's number must reach the collector as that number."""

from __future__ import annotations

import pytest
from heap import bytes_held
from test_otel_plain_span import Session

from mcpwatch.events import Kind
from mcpwatch.otel import spans
from mcpwatch.otel.spans import SpanBuilder


def test_a_host_reusing_one_id_whose_ends_were_dropped_leaves_a_bounded_number_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every call reuses the id "1" (as a host may once its previous call ended); the ends of all but the last were
    # dropped. The open calls were one id, so the bound by ids never held.
    monkeypatch.setattr(spans, "OPEN_MAX", 100)
    s = Session.begun()
    builder = SpanBuilder(lean=True)
    for n in range(1000):
        s.start("1", up_id=n)
        if n % 2:  # a call whose start was full (an odd method): the full path holds it too
            s.add(Kind.REQUEST_START, "1", None, method=7, up_id=n)
    builder.fold_round(s.events)
    assert sum(map(len, builder._open.values())) <= 100


def test_open_calls_with_tool_names_in_tens_of_kilobytes_are_held_by_bytes() -> None:
    """600 calls naming 32 KiB tools, none ended: held were 600 spans of twice that (the name and the attribute)."""
    s = Session.begun()
    builder = SpanBuilder(lean=True)
    builder.fold_round(s.events)

    def calls() -> None:
        for n in range(600):
            s.events.clear()
            s.start(f"r{n}", f"{n:05d}" + "t" * (1 << 15), up_id=n)
            builder.fold_round(s.events)
        s.events.clear()

    held = bytes_held(calls)
    assert held < 12 << 20, held  # OPEN_TEXT_MAX and what a round makes
    assert len(builder._open) > 10  # the recent calls are still held (their ends would still make spans)


def test_spans_with_tool_names_in_tens_of_kilobytes_go_in_bounded_requests() -> None:
    """A request is cut by weight: 60 calls naming 64 KiB tools (the full path: past a shape's text) were one request
    of 8 MB, as 2,048 of them would be a gigabyte. Each request now holds about what 2,048 plain spans would."""
    from test_otel_plain_span import RESOURCE

    from mcpwatch.otel.encode import SpanEncoder
    from mcpwatch.otel.exporter import request_chunks

    s = Session.begun()
    for n in range(60):
        tool = f"{n:05d}" + "t" * (1 << 16)
        s.start(f"r{n}", tool, up_id=n)
        s.end(f"r{n}", tool)
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    chunks = request_chunks(spans)
    assert [span for chunk in chunks for span in chunk] == spans
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    sizes = [len(encoder.request(chunk)) for chunk in chunks]
    assert max(sizes) < 1 << 20, sizes


def test_an_upstreams_progress_past_int64_reaches_the_collector_as_its_number() -> None:
    """An upstream's progress is any JSON number; one past int64 was sent wrapped into another (10**30 as
    5076944270305263616). It now goes as a double; the numbers int64 holds go as before."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from test_otel_plain_span import RESOURCE

    from mcpwatch.otel.encode import SpanEncoder

    values = [10**30, -(10**30), 2**64, 2**63, 10**400, -(10**400), 2**63 - 1, -(2**63), 7]
    s = Session.begun()
    for n, value in enumerate(values):
        s.start(f"r{n}", up_id=n)
        s.add(Kind.PROGRESS, f"r{n}", "noop", progress=value)
        s.end(f"r{n}")
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    request = ExportTraceServiceRequest.FromString(SpanEncoder(RESOURCE, "mcpwatch", "1").request(spans))
    sent = [span.events[0].attributes[0].value for span in request.resource_spans[0].scope_spans[0].spans]
    for value, got in zip(values, sent, strict=True):
        if -(2**63) <= value < 2**63:
            assert got.WhichOneof("value") == "int_value" and got.int_value == value
        else:
            assert got.WhichOneof("value") == "double_value"
            assert got.double_value == (
                float(value) if abs(value) < 10**300 else float("inf") * (1 if value > 0 else -1)
            )


def _cut_calls_work(calls: int) -> int:
    """Python lines run (every frame, comparisons included: a count, not a time) to fold `calls` calls a host cancels
    at once (each held for its late window), then as many that end in error, the upstream's late answers to half the
    cut ones, and the release of the rest when their window passes."""
    import sys
    from types import FrameType
    from typing import Any

    s = Session.begun()
    for n in range(calls):
        s.start(f"c{n}", up_id=n)
        s.add(Kind.TOMBSTONE_ADD, f"c{n}", "noop", reason="cancelled", ttl_s=30.0, up_id=n)
        s.end(f"c{n}", outcome="cancelled")
    for n in range(calls):
        s.start(f"e{n}", up_id=calls + n)
        s.end(f"e{n}", outcome="tool_error")
    for n in range(0, calls, 2):
        s.add(Kind.TOMBSTONE_HIT, None, "noop", what="response", up_id=n, age_s=1.0)
    builder = SpanBuilder(lean=True, late_window_s=30.0)
    lines = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return trace

    sys.settrace(trace)
    try:
        spans, _ = builder.fold_round(s.events)
        spans += builder.due(s.events[-1].ts + 31.0)
    finally:
        sys.settrace(None)
    assert len(spans) == 2 * calls and not builder.holding()  # every call's span, each once
    return lines


def test_calls_a_host_cancels_at_once_cost_the_export_a_bounded_work_each() -> None:
    """A host cancelling each call as it sends it makes cut calls held for their late window, thousands at a time.
    Each release, late answer and other call's end scanned them all (comparing spans field by field): 8,000 of them
    took 8.5 s of the export thread's CPU to release, 2.4 s for as many calls ending in error, 11 s for their late
    answers, holding the interpreter's lock the wrapper's loop needs. Twice the calls is now about twice the work."""
    once, twice = _cut_calls_work(150), _cut_calls_work(300)
    assert twice < 2.3 * once, (once, twice)


def test_calls_a_host_cancels_at_once_are_held_up_to_a_bound_and_none_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each cut call was held for its whole late window (30 s), however many: a host cancelling every call as it
    sends it made the export hold every one of them, progress events and all. Past `HELD_MAX` the oldest is exported
    at once; every call's span still leaves once, in the order the calls were held."""
    monkeypatch.setattr(spans, "HELD_MAX", 50)
    s = Session.begun()
    for n in range(400):
        s.start(f"c{n}", up_id=n)
        s.add(Kind.TOMBSTONE_ADD, f"c{n}", "noop", reason="cancelled", ttl_s=30.0, up_id=n)
        s.end(f"c{n}", outcome="cancelled")
    builder = SpanBuilder(lean=True, late_window_s=30.0)
    early, _ = builder.fold_round(s.events)
    assert len(builder._held) == 50 and len(early) == 350
    late = builder.due(s.events[-1].ts + 31.0)
    names = [span.attributes["jsonrpc.request.id"] for span in [*early, *late]]  # type: ignore[union-attr]
    assert names == [f"c{n}" for n in range(400)] and not builder.holding()
