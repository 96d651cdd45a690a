"""The Textual- and OpenTelemetry-free parts of the export: settings, trace context, events → spans."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from mcpwatch.config import OtelSettings, settings_from_mapping
from mcpwatch.errors import UserError
from mcpwatch.events import Event, Kind
from mcpwatch.otel import context
from mcpwatch.otel.config import OtelConfigError, resolve
from mcpwatch.otel.spans import DURATION_METRIC, CallSpan, Measure, SpanBuilder, session_spans

HOST_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
HOST_SPAN = "00f067aa0ba902b7"


# ---------------------------------------------------------------------------------------------- settings


def test_export_is_off_unless_asked_for():
    assert resolve({}, OtelSettings()) is None
    assert resolve({"OTEL_SERVICE_NAME": "x"}, OtelSettings()) is None


def test_the_standard_variables_win_over_the_file():
    target = resolve(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "wrappers"},
        OtelSettings(endpoint="http://file:4318", service_name="from-file"),
    )
    assert target is not None
    assert target.traces_url == "http://collector:4318/v1/traces"
    assert target.metrics_url == "http://collector:4318/v1/metrics"
    assert target.service_name == "wrappers" and target.source == "environment"
    specific = resolve(
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x", "OTEL_METRICS_EXPORTER": "none"}, OtelSettings()
    )
    assert specific is not None and specific.traces_url == "http://t:1/x" and specific.metrics_url is None


def test_the_file_alone_turns_export_on_and_can_turn_it_off():
    target = resolve({}, OtelSettings(endpoint="http://file:4318", headers={"x-key": "k"}))
    assert target is not None and target.traces_url == "http://file:4318/v1/traces" and target.headers == {"x-key": "k"}
    assert target.source == "mcpwatch.toml [otel]" and target.service_name == "mcpwatch"
    assert resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, OtelSettings(enabled=False)) is None
    assert (
        resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, OtelSettings()) is None
    )


def test_grpc_and_an_endpointless_enable_are_refused_with_the_reason():
    with pytest.raises(OtelConfigError, match="4318"):
        resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, OtelSettings())
    with pytest.raises(OtelConfigError, match="endpoint"):
        resolve({}, OtelSettings(enabled=True))
    with pytest.raises(OtelConfigError, match="not an http"):
        resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "not a url"}, OtelSettings())


def test_the_otel_table_is_validated_and_its_header_values_never_reach_the_log():
    settings = settings_from_mapping({"otel": {"endpoint": "https://c:4318", "headers": {"authorization": "Bearer s"}}})
    assert settings.otel.headers == {"authorization": "Bearer s"}
    assert settings.snapshot()["otel"]["headers"] == {"authorization": "<redacted>"}
    for bad, key in (({"endpoint": "collector:4318"}, "otel.endpoint"), ({"headers": {"a": 1}}, "otel.headers")):
        with pytest.raises(UserError, match=key):
            settings_from_mapping({"otel": bad})


# ---------------------------------------------------------------------------------------------- trace context


def test_a_host_traceparent_makes_the_wrapper_span_its_child_and_the_upstream_its_grandchild():
    params = {"name": "t", "_meta": {"traceparent": f"00-{HOST_TRACE}-{HOST_SPAN}-01", "tracestate": "a=b"}}
    ids = context.stamp(params)
    assert ids["trace_id"] == HOST_TRACE and ids["parent_span_id"] == HOST_SPAN
    assert len(ids["span_id"]) == 16 and ids["span_id"] != HOST_SPAN
    assert params["_meta"] == {"traceparent": f"00-{HOST_TRACE}-{ids['span_id']}-01", "tracestate": "a=b"}


@pytest.mark.parametrize(
    "meta",
    [None, {}, {"traceparent": "garbage"}, {"traceparent": f"00-{'0' * 32}-{HOST_SPAN}-01"}, {"traceparent": 7}],
)
def test_without_a_valid_host_traceparent_the_wrapper_starts_the_trace(meta):
    params = {} if meta is None else {"_meta": dict(meta)}
    ids = context.stamp(params)
    assert "parent_span_id" not in ids and len(ids["trace_id"]) == 32 and ids["trace_id"] != "0" * 32
    assert params["_meta"]["traceparent"] == f"00-{ids['trace_id']}-{ids['span_id']}-01"


@pytest.mark.parametrize("seed", range(20))
def test_a_plain_calls_stamp_draws_the_ids_and_traceparent_the_general_stamp_draws(seed: int) -> None:
    """`stamp_own` writes `_random_hex` out for the plain call's loop: the same draws, the same `traceparent`."""
    random.seed(seed)
    context.restart_ids()
    general: dict[str, Any] = {"_meta": {"progressToken": 7}}
    ids = context.stamp(general)
    random.seed(seed)
    context.restart_ids()
    own: dict[str, Any] = {"progressToken": 7}
    assert dict(zip(("trace_id", "span_id"), context.stamp_own(own), strict=True)) == ids
    assert own == general["_meta"] and list(own) == list(general["_meta"])


# ---------------------------------------------------------------------------------------------- events → spans


SEQ = itertools.count(1)


def make(kind: str, ts: float, request_id: str | None = None, tool: str | None = None, **data: Any) -> Event:
    return Event(kind, "s1", ts, ts - 1000, next(SEQ), request_id, tool, None, data)


START = [
    make(Kind.SESSION_START, 1000.0, name="council", upstream={"kind": "http", "target": "http://up.example:8080/mcp"}),
    make(Kind.HOST_INFO, 1000.1, name="claude-code", version="2", protocol_version="2025-11-25", profile="claude-code"),
    make(Kind.UPSTREAM_STATE, 1000.2, state="ready", generation=1),
]


def spans_and_measures(events):
    builder = SpanBuilder(late_window_s=10)
    outputs = [o for e in events for o in builder.feed(e)]
    return builder, [o for o in outputs if isinstance(o, CallSpan)], [o for o in outputs if isinstance(o, Measure)]


def test_an_ok_call_is_a_client_span_named_and_attributed_by_the_conventions():
    trace = {"trace_id": HOST_TRACE, "span_id": "1" * 16, "parent_span_id": HOST_SPAN}
    events = [
        *START,
        make(
            Kind.REQUEST_START,
            1001.0,
            "7",
            "search",
            method="tools/call",
            up_id=3,
            budget_s=50,
            budget_source="derived",
            **trace,
        ),
        make(Kind.PROGRESS, 1001.5, "7", "search", progress=1, total=2, message="half"),
        make(Kind.REQUEST_END, 1002.0, "7", "search", outcome="ok", duration_s=1.0, method="tools/call"),
    ]
    _, spans, measures = spans_and_measures(events)
    (span,) = spans
    assert span.name == "tools/call search"
    assert (span.trace_id, span.span_id, span.parent_span_id) == (HOST_TRACE, "1" * 16, HOST_SPAN)
    assert span.start_ns == 1001_000_000_000 and span.end_ns == 1002_000_000_000 and span.error is None
    assert span.attributes == {
        "mcpwatch.wrapper.name": "council",
        "server.address": "up.example",
        "server.port": 8080,
        "mcp.method.name": "tools/call",
        "network.transport": "tcp",
        "jsonrpc.request.id": "7",
        "mcp.protocol.version": "2025-11-25",
        "gen_ai.tool.name": "search",
        "gen_ai.operation.name": "execute_tool",
        "mcpwatch.budget_s": 50.0,
        "mcpwatch.budget_source": "derived",
        "mcpwatch.host_profile": "claude-code",
        "mcpwatch.generation": 1,
        "mcpwatch.upstream.request_id": 3,
        "mcpwatch.outcome": "ok",
    }
    assert span.events == [("mcpwatch.progress", 1001_500_000_000, {"progress": 1, "total": 2, "message": "half"})]
    duration = [m for m in measures if m.name == DURATION_METRIC]
    assert duration == [
        Measure(
            DURATION_METRIC,
            1.0,
            {
                "mcp.method.name": "tools/call",
                "gen_ai.tool.name": "search",
                "gen_ai.operation.name": "execute_tool",
                "network.transport": "tcp",
                "mcp.protocol.version": "2025-11-25",
                "server.address": "up.example",
                "server.port": 8080,
            },
        )
    ]


def test_errors_are_typed_as_the_conventions_say():
    events = [*START]
    for n, (outcome, error) in enumerate(
        [("tool_error", None), ("error", '{"code": -32602, "message": "bad"}'), ("upstream_lost", "it died")]
    ):
        events.append(make(Kind.REQUEST_START, 1001.0 + n, str(n), "t", method="tools/call", up_id=n))
        events.append(make(Kind.REQUEST_END, 1001.5 + n, str(n), "t", outcome=outcome, duration_s=0.5, error=error))
    _, spans, _ = spans_and_measures(events)
    typed = [(s.attributes.get("error.type"), s.attributes.get("rpc.response.status_code"), s.error) for s in spans]
    assert typed == [
        ("tool_error", None, "the tool returned isError"),
        ("-32602", "-32602", '{"code": -32602, "message": "bad"}'),
        ("upstream_lost", None, "it died"),
    ]


def test_a_cut_call_waits_for_its_late_answer_and_records_it_on_its_own_span():
    events = [
        *START,
        make(Kind.REQUEST_START, 1001.0, "9", "slow", method="tools/call", up_id=5, budget_s=2.0),
        make(Kind.TOMBSTONE_ADD, 1003.0, "9", "slow", up_id=5, ttl_s=47.0, reason="deadline"),
        make(Kind.REQUEST_END, 1003.0, "9", "slow", outcome="deadline", duration_s=2.0, partial=True, error="deadline"),
    ]
    builder, spans, measures = spans_and_measures(events)
    assert spans == [] and builder.due(1012.9) == []  # held within the late window
    assert [m.name for m in measures if m.value == 1 and m.name == "mcpwatch.deadlines"] == ["mcpwatch.deadlines"]
    late = builder.feed(make(Kind.TOMBSTONE_HIT, 1004.5, "9", "slow", up_id=5, what="response", age_s=1.5))
    (span,) = [o for o in late if isinstance(o, CallSpan)]
    assert span.attributes["error.type"] == "timeout"
    assert span.attributes["rpc.response.status_code"] == "DEADLINE_EXCEEDED"
    assert [name for name, _, _ in span.events] == [
        "mcpwatch.cancel_sent",
        "mcpwatch.tombstone",
        "mcpwatch.partial_result",
        "mcpwatch.late_answer",
    ]
    assert span.events[-1][2] == {"mcpwatch.late.delay_s": 1.5}
    assert Measure("mcpwatch.late_answers", 1, {"gen_ai.tool.name": "slow", "mcpwatch.late.what": "response"}) in late
    assert builder.due(2000) == [] and builder.drain() == []
    kept = builder.feed(make(Kind.LATE_RESULT, 1004.5, "9", "slow", up_id=5, delay_s=1.5, outcome="ok"))
    assert kept == [Measure("mcpwatch.late_results", 1, {"gen_ai.tool.name": "slow", "mcpwatch.outcome": "ok"})]
    reused = builder.feed(make(Kind.LATE_REUSE, 1010.0, "10", "slow", from_request_id="9"))
    assert reused == [Measure("mcpwatch.late_reuses", 1, {"gen_ai.tool.name": "slow"})]


def test_a_cut_call_with_no_late_answer_is_released_when_its_window_passes():
    events = [
        *START,
        make(Kind.REQUEST_START, 1001.0, "9", "hang", method="tools/call", up_id=5, budget_s=2.0),
        make(Kind.TOMBSTONE_ADD, 1003.0, "9", "hang", up_id=5, ttl_s=47.0, reason="deadline"),
        make(Kind.REQUEST_END, 1003.0, "9", "hang", outcome="deadline", duration_s=2.0),
    ]
    builder, _, _ = spans_and_measures(events)
    assert builder.due(1012.99) == []
    (span,) = builder.due(1013.0)
    assert span.name == "tools/call hang" and builder.drain() == []


def test_a_recorded_session_without_trace_ids_gets_stable_ones():
    events = [
        *START,
        make(Kind.REQUEST_START, 1001.0, "1", None, method="tools/list", up_id=1, budget_s=None),
        make(Kind.REQUEST_END, 1001.1, "1", None, outcome="ok", duration_s=0.1),
    ]
    first, second = session_spans(events), session_spans(events)
    assert [s.name for s in first] == ["tools/list"]
    assert (first[0].trace_id, first[0].span_id) == (second[0].trace_id, second[0].span_id)
    assert first[0].parent_span_id is None and "gen_ai.operation.name" not in first[0].attributes


def test_upstream_restarts_and_tombstone_expiry_are_measured():
    events = [
        *START,
        make(Kind.UPSTREAM_STATE, 1005.0, state="backoff", generation=1),
        make(Kind.UPSTREAM_STATE, 1006.0, state="ready", generation=2),
        make(Kind.TOMBSTONE_EXPIRE, 1007.0, None, None, up_id=4, age_s=47.0),
    ]
    _, _, measures = spans_and_measures(events)
    assert measures == [Measure("mcpwatch.upstream.restarts", 1, {}), Measure("mcpwatch.tombstones", -1, {})]


class _Draws:
    """`random.getrandbits` answering from a list."""

    def __init__(self, draws: list[int]) -> None:
        self.draws = draws

    def getrandbits(self, bits: int) -> int:
        assert bits == 192 * context.IDS_AT_ONCE
        return self.draws.pop(0)


def test_ids_of_zeros_are_left_out_and_every_id_is_a_draw_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """New traces' ids are drawn `IDS_AT_ONCE` pairs at once, each pair 48 hex digits of the draw in turn; an
    all-zero trace or span id is invalid, so it is left out (the next valid pair is taken)."""
    pairs = [("0" * 32, "1" * 16), ("2" * 32, "0" * 16), *[(f"{n:032x}", f"{n + 1:016x}") for n in range(3, 257)]]
    block = int("".join(trace + span for trace, span in pairs), 16)
    after = int(f"{0xABC:032x}{9:016x}" * context.IDS_AT_ONCE, 16)
    monkeypatch.setattr(context, "random", _Draws([block, after]))
    context.restart_ids()
    try:
        meta: dict[str, Any] = {}
        assert context.stamp_own(meta) == (f"{3:032x}", f"{4:016x}")
        assert meta == {"traceparent": f"00-{3:032x}-{4:016x}-01"}
        taken = [context.stamp({})["trace_id"] for _ in range(254)]
        assert taken[-1] == f"{0xABC:032x}" and len(set(taken)) == 254  # 253 left of the block, then the next draw's
    finally:
        monkeypatch.undo()
        context.restart_ids()


def test_ids_drawn_across_blocks_never_repeat_and_a_seed_gives_them_again() -> None:
    """Calls' ids taken across several blocks of `IDS_AT_ONCE`, the plain stamp, the general one and a host's child
    (whose span id is drawn on its own, between blocks) in turn: none repeats, none is all zeros, each is lowercase
    hex of its size; after the same seed and `restart_ids`, the same ids in the same order."""
    host = {"traceparent": f"00-{'a' * 32}-{'b' * 16}-01"}

    calls = 3 * context.IDS_AT_ONCE + 7
    own = sum(1 for n in range(calls) if n % 3 != 2)  # the calls whose trace is the wrapper's own

    def drawn() -> list[tuple[str, str]]:
        ids: list[tuple[str, str]] = []
        for n in range(calls):
            if n % 3 == 0:
                ids.append(context.stamp_own({}))
            elif n % 3 == 1:
                made = context.stamp({})
                ids.append((made["trace_id"], made["span_id"]))
            else:
                made = context.stamp({"_meta": dict(host)})
                ids.append((made["trace_id"], made["span_id"]))
        return ids

    random.seed(41)
    context.restart_ids()
    first = drawn()
    random.seed(41)
    context.restart_ids()
    assert drawn() == first
    context.restart_ids()  # not seeded again: the generator goes on, nothing repeats
    again = drawn()
    spans = [span for _, span in first + again]
    traces = [trace for trace, _ in first + again if trace != "a" * 32]
    assert len(set(spans)) == len(spans) and len(set(traces)) == len(traces) == 2 * own
    hex_digits = set("0123456789abcdef")
    assert all(len(t) == 32 and set(t) <= hex_digits and t != "0" * 32 for t in traces)
    assert all(len(s) == 16 and set(s) <= hex_digits and s != "0" * 16 for s in spans)
    context.restart_ids()
