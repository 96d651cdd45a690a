"""`bench/otelcount.py` counts what export adds to a plain call: its export part must do the export's whole work, a
span for every call in a request the collector reads, or the count would be of less than the wrapper does."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from mcpwatch.bench import otelcount


def test_every_call_of_a_counted_run_reaches_the_collector_once_with_its_own_ids() -> None:
    requests = otelcount.run(200, export=True)
    spans = [
        span
        for body in requests
        for span in ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans
    ]
    assert len(spans) == otelcount.WARM_UP + 200
    assert len({span.span_id for span in spans}) == len(spans) and all(len(span.trace_id) == 16 for span in spans)
    assert {span.name for span in spans} == {"tools/call echo"}
    upstream_ids = [a.value.int_value for s in spans for a in s.attributes if a.key == "mcpwatch.upstream.request_id"]
    assert sorted(upstream_ids) == upstream_ids and len(set(upstream_ids)) == len(spans)


def test_two_counted_runs_send_the_same_bytes() -> None:
    """A run seeds the ids' generator, so two runs differ by their calls only: the ids drawn before the seed (256 at
    once, at import) were the first ones a run sent, other ones each run."""
    assert otelcount.run(5, export=True) == otelcount.run(5, export=True)


def test_without_export_nothing_is_queued_or_encoded() -> None:
    assert otelcount.run(10, export=False) == []
