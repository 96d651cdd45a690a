"""A gathering round folded at once (`SpanBuilder.fold_round`: a plain call's end with no observation in between,
the in-flight level's moves of a method added up) gives the collector what folding its events one by one gave: the
same spans and request bytes, and after every round the same metric points (values, buckets, series and their
order), cumulative and delta."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from heap import bytes_held
from test_otel_plain_span import RESOURCE, Session, _mixed

from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.otel.encode import SpanEncoder
from mcpwatch.otel.metric_fold import OtlpMetricFold, Snapshot
from mcpwatch.otel.spans import CallSpan, Durations, Measure, PlainSpan, SpanBuilder


def _one_by_one(builder: SpanBuilder, events: list[Event]) -> tuple[list[CallSpan | PlainSpan], list[Measure]]:
    """The export thread's round before: each event fed, its outputs kept in order."""
    spans: list[CallSpan | PlainSpan] = []
    measures: list[Measure] = []
    for event in events:
        for output in builder.feed(event):
            (measures if isinstance(output, Measure) else spans).append(output)  # type: ignore[arg-type]
    return spans, measures


def _rounds(
    events: list[Event], cuts: list[int], at_once: bool, delta: bool, encoded: bool = False
) -> list[tuple[bytes, Snapshot]]:
    """Each round's request bytes and the metrics' snapshot after it (`encoded`: plain spans encoded as they end, as
    the live export does)."""
    builder, encoder, fold = SpanBuilder(lean=True), SpanEncoder(RESOURCE, "mcpwatch", "1"), OtlpMetricFold(0, delta)
    seen: list[tuple[bytes, Snapshot]] = []
    encode = encoder.record_field if encoded else None
    for n, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(events)], strict=True)):
        chunk = events[start:end]
        spans, measures = builder.fold_round(chunk, encode) if at_once else _one_by_one(builder, chunk)
        fold.now_ns = 1000 * (n + 1)
        for measure in measures:
            fold.record(measure)
        seen.append((encoder.request(spans), fold.snapshot(1000 * (n + 1) + 1)))
    return seen


def _plain_calls(calls: int) -> Session:
    """A session of `calls` plain calls, each ended before the next starts (`r0`, `r1`, …)."""
    s = Session.begun()
    for n in range(calls):
        s.start(f"r{n}", up_id=n, budget_source="derived")
        s.end(f"r{n}")
    return s


def _random_session(rng: random.Random, calls: int = 400) -> list[Event]:
    """Calls open at once, ids reused, odd values, state changing: everything a round may hold."""
    s = Session.begun()
    open_ids: list[str] = []
    for n in range(calls):
        roll = rng.random()
        if roll < 0.45 or not open_ids:
            rid = str(rng.randrange(15))
            method = rng.choice(["tools/call", "tools/call", "tools/call", "resources/read", 7, "", "\ud800x"])
            s.start(rid, rng.choice(["a", "b", None]), up_id=n, method=method, host_session=rng.choice([None, "h"]))
            open_ids.append(rid)
        elif roll < 0.9:
            rid = open_ids.pop(rng.randrange(len(open_ids)))
            outcome = rng.choice(["ok", "ok", "ok", "error", "deadline", "tool_error"])
            extra: dict[str, Any] = {"partial": True} if rng.random() < 0.05 else {}
            duration = rng.choice([0.001, 0.5, 2, True, "x", float("nan"), -1.0, 400.0])
            method = rng.choice(["tools/call", "tools/call", "prompts/get", None])
            s.add(Kind.REQUEST_END, rid, "a", outcome=outcome, duration_s=duration, method=method, **extra)
        elif roll < 0.93:
            s.add(Kind.PROGRESS, rng.choice(open_ids), None, progress=n)
        elif roll < 0.96:
            s.add(Kind.TOMBSTONE_ADD, rng.choice(open_ids), "a", reason="deadline", ttl_s=1.0, up_id=n)
        elif roll < 0.97:
            s.add(Kind.TOMBSTONE_EXPIRE, None, "a")
        elif roll < 0.98:  # its start dropped by a full queue (a stalled collector), or never seen
            s.add(Kind.REQUEST_END, f"gone{n}", "a", outcome="ok", duration_s=0.01, method="tools/call")
        else:
            s.add(Kind.HOST_INFO, protocol_version=rng.choice(["2025-06-18", "2025-11-25"]))
    return s.events


@pytest.mark.parametrize("delta", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_rounds_folded_at_once_give_the_same_spans_and_points(seed: int, delta: bool) -> None:
    rng = random.Random(seed)
    events = _mixed() + _random_session(rng)
    cuts = sorted(rng.sample(range(1, len(events)), rng.randrange(1, 40)))
    before = _rounds(events, cuts, at_once=False, delta=delta)
    after = _rounds(events, cuts, at_once=True, delta=delta)
    assert sum(len(body) for body, _ in after) > 10_000  # spans were sent: the comparison means something
    assert any(len(snapshot.levels) >= 2 for _, snapshot in after)  # two methods' levels, tombstones
    assert after == before
    assert _rounds(events, cuts, at_once=True, delta=delta, encoded=True) == before


def test_a_round_is_one_measurement_per_level_and_one_run_of_durations_per_shape() -> None:
    s = _plain_calls(50)
    spans, measures = SpanBuilder(lean=True).fold_round(s.events)
    assert len(spans) == 50 and all(isinstance(span, PlainSpan) for span in spans)
    assert [m.name for m in measures].count("mcpwatch.calls.in_flight") == 1
    assert [m[1] for m in measures if m.name == "mcpwatch.calls.in_flight"] == [0.0]  # the series still made
    (run,) = [m for m in measures if isinstance(m, Durations)]
    assert run.values == [0.001] * 50 and len(measures) == 2


def _durations_session(durations: list[Any], tools: list[str]) -> list[Event]:
    """Plain calls of these tools in turn, each ending well after these durations, with a call of the first tool
    that ends partial (a full span, the same series) after the first third."""
    s = Session.begun()
    for n, duration in enumerate(durations):
        if n == len(durations) // 3:
            s.start("partial", tools[0], up_id=10_000)
            s.add(
                Kind.REQUEST_END, "partial", tools[0], outcome="ok", duration_s=0.3, method="tools/call", partial=True
            )
        tool = tools[n % len(tools)]
        s.start(f"r{n}", tool, up_id=n)
        s.add(Kind.REQUEST_END, f"r{n}", tool, outcome="ok", duration_s=duration, method="tools/call")
    return s.events


@pytest.mark.parametrize("delta", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_durations_added_up_in_runs_are_the_sum_one_by_one_gave(seed: int, delta: bool) -> None:
    """A run of durations is added at once (buckets counted in C, the total summed in the calls' order): the same
    points, to the bit, as one measurement per call; a run holding a value the metrics skip (NaN, infinite, negative)
    is added one by one, and a series' values keep their order across a full span's duration between runs."""
    rng = random.Random(seed)
    odd = [float("nan"), float("inf"), -1.0, -0.0, 0.0, 1e-300, 1e300]
    durations = [rng.choice([rng.random() * 10 ** rng.randrange(-6, 4), *odd]) for _ in range(300)]
    tools = ["a", "b", "a", "a", "c"]
    events = _durations_session(durations, tools)
    cuts = sorted(rng.sample(range(1, len(events)), rng.randrange(1, 8)))
    before = _rounds(events, cuts, at_once=False, delta=delta)
    assert any(snapshot.durations for _, snapshot in before)
    assert _rounds(events, cuts, at_once=True, delta=delta) == before
    assert _rounds(events, cuts, at_once=True, delta=delta, encoded=True) == before


REQUEST_IDS = ["", "7", "s:" + "x" * 97, "x" * 99, "x" * 100, "x" * 126, "x" * 127, "é" * 50, "\ud800", "a\udfffb"]
UP_IDS = [None, 0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**63 - 1, -1, True]
TRACE_AND_SPAN_IDS = [
    (None, None),
    ("A" * 32, "A" * 16),  # upper case
    ("1" * 31, "1" * 16),  # short: read as a number
    ("00" + "a" * 32, "b" * 14),  # as long as the usual two together, split elsewhere
    (" " + "c" * 32, "d" * 16),  # whitespace, which `bytes.fromhex` skips
]


def test_a_plain_span_s_field_is_the_full_span_s() -> None:
    """A plain span's field made in one join, whatever a host's id, the upstream's, the parent's or the trace's: the
    full span's bytes."""
    s = Session.begun()
    for request_id, up_id, parent, (trace_id, span_id) in itertools.product(
        [*REQUEST_IDS, "x" * 5000], UP_IDS, [None, "00f067aa0ba902b7"], TRACE_AND_SPAN_IDS
    ):
        ids = {"trace_id": trace_id, "span_id": span_id} if trace_id else {}
        s.start(request_id, up_id=up_id, **({"parent_span_id": parent} if parent else {}), **ids)
        s.end(request_id)
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    assert len(spans) == 11 * 12 * 2 * len(TRACE_AND_SPAN_IDS) and all(isinstance(span, PlainSpan) for span in spans)
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    encoded, _ = SpanBuilder(lean=True).fold_round(s.events, encoder.record_field)  # as each call ends
    assert len(encoded) == len(spans)
    for span, field in zip(spans, encoded, strict=True):
        assert encoder.request([span]) == encoder.request([span.full()]) == encoder.request([field]), span  # type: ignore[union-attr]


def test_varints_are_protobuf_s() -> None:
    from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[import-untyped]

    from mcpwatch.otel.encode import _varint

    values = [*range(0, 1 << 15), (1 << 21) - 1, 1 << 21, 2**40, 2**63 - 1]
    assert all(_varint(v) == _VarintBytes(v) for v in values)
    assert _varint(-1) == _VarintBytes((1 << 64) - 1)  # int64: ten bytes


def test_a_host_naming_methods_in_megabytes_leaves_nothing_held() -> None:
    """The in-flight level's attributes are kept by method, but not a method a host names in 64 KiB: 1,000 such calls
    leave the builder holding kilobytes, not the 64 MiB a kept attribute set per method would be."""
    s = Session.begun()
    builder = SpanBuilder(lean=True)
    builder.fold_round(s.events)

    def calls() -> None:
        for n in range(1000):
            s.events.clear()
            method = f"{n:05d}" + "m" * (1 << 16)
            s.start(f"r{n}", None, method=method, up_id=n)
            s.add(Kind.REQUEST_END, f"r{n}", None, outcome="ok", duration_s=0.001, method=method)
            spans, measures = builder.fold_round(s.events)
            assert len(spans) == 1 and {m.attributes["mcp.method.name"] for m in measures} == {method}
        s.events.clear()

    held = bytes_held(calls)
    assert held < 1 << 20, held


def test_a_large_batch_parses_as_one_request_holding_every_span() -> None:
    """A batch past 16 KiB (three-byte lengths for its enclosing messages) is still one well-formed request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    s = _plain_calls(1000)
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    body = SpanEncoder(RESOURCE, "mcpwatch", "1").request(spans)
    assert len(body) > 1 << 18
    request = ExportTraceServiceRequest.FromString(body)
    (resource_spans,) = request.resource_spans
    assert {a.key for a in resource_spans.resource.attributes} == set(RESOURCE)
    (scope_spans,) = resource_spans.scope_spans
    assert scope_spans.scope.name == "mcpwatch"
    assert [span.span_id.hex() for span in scope_spans.spans] == [span.span_id for span in spans]  # type: ignore[union-attr]


def test_a_second_s_spans_are_one_request_and_heavy_spans_are_bounded_ones() -> None:
    """At 1,000 calls/s a second's plain spans go in one request (chunks of 512 took two or three POSTs); spans with
    many events weigh more, so a request's bytes stay bounded whatever the spans hold."""
    from mcpwatch.otel.exporter import BATCH_MAX, request_chunks

    s = _plain_calls(3000)
    for n in range(100):  # each with 64 progress messages of 256 characters: a full span of about 20 KB
        s.start(f"p{n}", up_id=n)
        for k in range(64):
            s.add(Kind.PROGRESS, f"p{n}", "noop", progress=k, message="m" * 300)
        s.end(f"p{n}")
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    plain, heavy = spans[:3000], spans[3000:]
    assert [len(chunk) for chunk in request_chunks(plain[:1000])] == [1000]
    assert [len(chunk) for chunk in request_chunks(plain)] == [BATCH_MAX, 3000 - BATCH_MAX]
    chunks = request_chunks(heavy)
    assert len(chunks) == 4 and [span for chunk in chunks for span in chunk] == heavy
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    sizes = [len(encoder.request(chunk)) for chunk in [*chunks, *request_chunks(plain)]]
    assert max(sizes) < 1 << 20, sizes


def test_a_plain_call_s_start_takes_the_general_way_once_per_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The round's own start path is the one plain calls take (the general one makes the shape, once): a change that
    sent them all the general way again would still give the same bytes, so this says it."""
    general: list[str | None] = []
    original = SpanBuilder._request_start

    def counted(builder: SpanBuilder, event: Event, data: dict[str, Any]) -> Any:
        general.append(event.request_id)
        return original(builder, event, data)

    monkeypatch.setattr(SpanBuilder, "_request_start", counted)
    s = Session.begun()
    for n in range(30):
        s.start(f"r{n}", "a" if n % 2 else "b", up_id=n, budget_source="derived")
        s.end(f"r{n}")
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    assert len(spans) == 30 and general == ["r0", "r1"]


def test_an_upstream_id_past_int64_in_a_plain_field_is_the_full_span_s_double() -> None:
    """A plain span's field wrote an upstream id past int64 as a varint (wrapped into another number, 2**64 as 0)
    where the full span writes a double: the collector got another attribute value. Now both write the double."""
    s = Session.begun()
    up_ids = [2**63, 2**64 - 1, 2**64, 2**70, -(2**63) - 1, -(2**63), 2**63 - 1]
    for n, up_id in enumerate(up_ids):
        s.start(f"r{n}", up_id=up_id)
        s.end(f"r{n}")
    spans, _ = SpanBuilder(lean=True).fold_round(s.events)
    encoder = SpanEncoder(RESOURCE, "mcpwatch", "1")
    fields, _ = SpanBuilder(lean=True).fold_round(s.events, encoder.record_field)
    assert len(spans) == len(fields) == len(up_ids) and all(isinstance(span, PlainSpan) for span in spans)
    for span, field in zip(spans, fields, strict=True):
        assert encoder.request([field]) == encoder.request([span]) == encoder.request([span.full()]), span  # type: ignore[union-attr]


def _full_rounds(events: list[Event], cuts: list[int], delta: bool) -> list[tuple[bytes, Snapshot]]:
    """`_rounds` by the general builder (`lean=False`: every span a `CallSpan`, as `export --format otlp` folds)."""
    builder, encoder, fold = SpanBuilder(), SpanEncoder(RESOURCE, "mcpwatch", "1"), OtlpMetricFold(0, delta)
    seen: list[tuple[bytes, Snapshot]] = []
    for n, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(events)], strict=True)):
        spans, measures = _one_by_one(builder, events[start:end])
        fold.now_ns = 1000 * (n + 1)
        for measure in measures:
            fold.record(measure)
        seen.append((encoder.request(spans), fold.snapshot(1000 * (n + 1) + 1)))
    return seen


def _hostile_session(rng: random.Random, calls: int = 250) -> list[Event]:
    """What a host names (tools that are not Unicode, hold NUL or are past a shape's text, ids reused while open, as
    long as the recorder keeps them, odd budgets) and how an upstream ends (odd outcomes, partial flags of every
    truth, durations NaN, infinite, negative, subnormal, an int)."""
    tools = ["a", "b", "\ud800", "x\x00y", "t" * 1100, "é" * 600, "", None]
    request_ids = ["1", "2", "", "\udfff", "k" * 300, "é" * 70]
    s = Session.begun()
    open_calls: list[tuple[str, str | None]] = []
    for n in range(calls):
        roll = rng.random()
        if roll < 0.5 or not open_calls:
            request_id, tool = rng.choice(request_ids), rng.choice(tools)
            odd: dict[str, Any] = {}
            if rng.random() < 0.1:
                odd["budget_s"] = rng.choice([float("nan"), float("inf"), -1.0, 0, True, 10**30])
            if rng.random() < 0.1:
                odd["budget_source"] = rng.choice(["\ud800", "s" * 900, None])
            s.start(request_id, tool, up_id=rng.choice([n, n, 2**64, -5, True, None]), **odd)
            open_calls.append((request_id, tool))
        elif roll < 0.95:
            request_id, tool = open_calls.pop(rng.randrange(len(open_calls)))
            outcome = rng.choice(["ok", "ok", Outcome.OK, "OK", "tool_error", "error", None, 5])
            partial = {"partial": rng.choice([True, False, 0, None, "", 1])} if rng.random() < 0.1 else {}
            duration = rng.choice([0.001, 0.25, float("nan"), float("inf"), -0.0, -2.0, 3, 1e308, 5e-324])
            method = rng.choice(["tools/call", "tools/call", None, 7, "", "\ud800"])
            s.add(Kind.REQUEST_END, request_id, tool, outcome=outcome, duration_s=duration, method=method, **partial)
        else:
            s.add(Kind.HOST_INFO, protocol_version=rng.choice(["2025-06-18", "\ud800" * 3]))
    return s.events


@pytest.mark.parametrize("seed", range(4))
def test_hostile_hosts_and_upstreams_give_the_collector_what_the_general_fold_gives(seed: int) -> None:
    """The round's plain path, its spans encoded as they end or not, sends what the general builder sends for the
    same events, whatever a host names and however an upstream ends (the metric points compared by their text:
    NaN is never equal to itself)."""
    rng = random.Random(seed)
    events = _hostile_session(rng)
    cuts = sorted(rng.sample(range(1, len(events)), rng.randrange(1, 20)))
    spans, _ = SpanBuilder(lean=True).fold_round(events)
    assert sum(type(span) is PlainSpan for span in spans) > 10  # the plain path was taken
    for delta in (False, True):
        general = [repr(one) for one in _full_rounds(events, cuts, delta)]
        assert sum(map(len, general)) > 10_000
        for way in ({"at_once": False}, {"at_once": True}, {"at_once": True, "encoded": True}):
            got = [repr(one) for one in _rounds(events, cuts, delta=delta, **way)]
            differ = [n for n, (one, other) in enumerate(zip(got, general, strict=True)) if one != other]
            assert not differ, f"{way}, delta {delta}: rounds {differ} differ"  # not the texts: megabytes
