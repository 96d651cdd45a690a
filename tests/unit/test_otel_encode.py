"""The export thread's own span encoding says exactly what the SDK's encoder said, and does less work for it.

`SpanEncoder` replaced a `ReadableSpan` per call and the SDK's generic encoder; the collector must receive the same
request. Compared as parsed protobuf messages, for calls of every shape the builder makes (ok, tool error, deadline
with tombstone and late answer, progress events past the cap, a parent span, task events). The work is counted, not
timed: a batch of calls with the same tool encodes each recurring attribute once.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from mcpwatch.config import OtelSettings
from mcpwatch.events import Event, Kind
from mcpwatch.otel import encode
from mcpwatch.otel.config import resolve
from mcpwatch.otel.exporter import SpanSender
from mcpwatch.otel.spans import MAX_SPAN_EVENTS, CallSpan, session_spans


def _sender() -> SpanSender:
    target = resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, OtelSettings())
    assert target is not None
    return SpanSender(target, "http://127.0.0.1:9/v1/traces")


def _events() -> list[Event]:
    seq = iter(range(1, 10_000))

    def make(kind: str, ts: float, rid: str | None, tool: str | None = None, **data: object) -> Event:
        return Event(kind, "s1", ts, ts, next(seq), request_id=rid, tool=tool, data=dict(data))

    events = [
        make(Kind.SESSION_START, 1000.0, None, name="w", upstream={"kind": "http", "target": "https://x.test/mcp"}),
        make(Kind.HOST_INFO, 1000.1, None, protocol_version="2025-06-18", profile={"name": "claude-code"}),
        make(Kind.REQUEST_START, 1001.0, "1", "ok", method="tools/call", up_id=1, budget_s=60.0, budget_source="d"),
        make(Kind.REQUEST_END, 1001.2, "1", "ok", outcome="ok", duration_s=0.2, method="tools/call"),
        make(
            Kind.REQUEST_START,
            1002.0,
            "2",
            "bad",
            method="tools/call",
            up_id=2,
            parent_span_id="00f067aa0ba902b7",
            trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
            span_id="a3ce929d0e0e4736",
            host_session="h1",
        ),
        make(Kind.REQUEST_END, 1002.5, "2", "bad", outcome="error", error='{"code": -32001, "message": "x"}'),
        make(Kind.REQUEST_START, 1003.0, "3", "tool", method="tools/call", up_id=3),
        make(Kind.REQUEST_END, 1003.1, "3", "tool", outcome="tool_error", partial=True),
        make(Kind.REQUEST_START, 1004.0, "4", "slow", method="tools/call", up_id=4, budget_s=2.0),
    ]
    events += [
        make(Kind.PROGRESS, 1004.1 + n / 1000, "4", "slow", progress=n, total=100, message="m")
        for n in range(MAX_SPAN_EVENTS + 3)
    ]
    events += [
        make(Kind.TOMBSTONE_ADD, 1006.0, "4", "slow", reason="deadline", ttl_s=30.0, up_id=4),
        make(Kind.REQUEST_END, 1006.0, "4", "slow", outcome="deadline"),
        make(Kind.TOMBSTONE_HIT, 1007.0, None, what="response", up_id=4, age_s=1.0),
        make(Kind.REQUEST_START, 1008.0, "5", "task", method="tools/call", up_id=5),
        make(Kind.TASK_CREATED, 1008.1, "5", "task", task_id="t1", status="working"),
        make(Kind.TASK_STATUS, 1008.2, "5", "task", status="completed", status_message="done"),
        make(Kind.REQUEST_END, 1008.3, "5", "task", outcome="ok", flag=True),
        make(Kind.REQUEST_START, 1009.0, "6", None, method="tools/list", up_id=6),
        make(Kind.REQUEST_END, 1009.1, "6", None, outcome="cancelled"),
    ]
    return events


def test_own_encoding_parses_to_the_sdks_request() -> None:
    sender = _sender()
    spans = session_spans(_events())
    assert len(spans) == 6 and any(s.dropped_events for s in spans) and any(s.parent_span_id for s in spans)
    ours = ExportTraceServiceRequest.FromString(sender.encoder.request(spans))
    theirs = encode_spans([sender.convert(span) for span in spans])
    assert ours == theirs
    assert sender.encoder.request(spans) == sender.encoder.request(spans)  # cached pairs give the same bytes


PER_CALL_ID, PER_CALL_UP = "jsonrpc.request.id", "mcpwatch.upstream.request_id"


def test_booleans_integers_negatives_floats_and_long_text_encode_alike() -> None:
    sender = _sender()
    spans = [
        CallSpan("a", "1" * 32, "2" * 16, None, 1, {"x": True}, end_ns=2),
        CallSpan("b", "1" * 32, "3" * 16, None, 1, {"x": 1}, end_ns=2),
        CallSpan("outil é", "f" * 32, "3" * 16, "4" * 16, 2**62, {"n": -5, "f": 1.5, "s": "ü" * 200}, end_ns=2**63),
        *[  # the attributes new with every call, encoded apart: small and large ids, text ids of any length
            CallSpan("c", "1" * 32, "5" * 16, None, 1, {PER_CALL_ID: request_id, PER_CALL_UP: up_id}, end_ns=2)
            for request_id, up_id in (("7", 0), ("1:é" * 60, 127), (9, 128), (-1, 2**40))
        ],
    ]
    ours = ExportTraceServiceRequest.FromString(sender.encoder.request(spans))
    assert ours == encode_spans([sender.convert(span) for span in spans])


def test_recurring_attributes_are_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = []
    real = encode.any_value

    def counting(value: Any) -> Any:
        made.append(value)
        return real(value)

    monkeypatch.setattr(encode, "any_value", counting)
    sender = _sender()
    made.clear()  # the resource's attributes, encoded once when the sender is made
    base = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "noop", "mcpwatch.outcome": "ok"}
    spans = [
        CallSpan("tools/call noop", f"{n + 1:032x}", f"{n + 1:016x}", None, n, {**base, "id": n}, end_ns=n)
        for n in range(100)
    ]
    sender.encoder.request(spans)
    assert len(made) == 3 + 100  # the three shared pairs once, the id per call


def test_the_sender_posts_the_encoded_bytes() -> None:
    sender = _sender()
    posted: list[bytes] = []

    class Result:
        success = True

    def post(data: Any) -> Result:
        posted.append(data)
        return Result()

    sender._post = post
    spans = session_spans(_events())
    assert sender.send(spans) is True
    assert ExportTraceServiceRequest.FromString(posted[0]) == encode_spans([sender.convert(s) for s in spans])
