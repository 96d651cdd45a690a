"""Finished call spans → one OTLP/HTTP traces request body, straight from `CallSpan`s.

The SDK's way (a `ReadableSpan` per call, then its generic encoder: a type check per attribute value, the resource
hashed per span to group spans by it) cost the export thread more than the rest of its work. Here the resource and
scope are encoded once, and an attribute that recurs (the tool, the method, the wrapper's name, the outcome) is
encoded once and reused: a few key-value messages are made per call, not one per attribute. The result parses to
the same request the SDK's encoder makes (tests/unit/test_otel_encode.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, SpanFlags, Status

from mcpwatch.otel.spans import AttributeValue, CallSpan

CACHE_MAX = 4096  # distinct (key, value) pairs kept encoded; past it the cache starts again (ids vary per call)
_KIND_CLIENT = Span.SpanKind.SPAN_KIND_CLIENT
_HAS_IS_REMOTE = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_IS_REMOTE = _HAS_IS_REMOTE | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
_UNSET = Status()
_ERROR = Status.StatusCode.STATUS_CODE_ERROR


def any_value(value: AttributeValue) -> AnyValue:
    """One attribute value as OTLP's AnyValue (bool before int: a bool is an int in Python)."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    return AnyValue(double_value=float(value))


class SpanEncoder:
    """Encodes batches of `CallSpan`s for one resource and instrumentation scope."""

    def __init__(self, resource: Mapping[str, Any], scope_name: str, scope_version: str) -> None:
        self.resource = Resource(attributes=[KeyValue(key=k, value=any_value(v)) for k, v in resource.items()])
        self.scope = InstrumentationScope(name=scope_name, version=scope_version)
        self._pairs: dict[tuple[str, type, AttributeValue], KeyValue] = {}

    def _attributes(self, attributes: Iterable[tuple[str, AttributeValue]]) -> list[KeyValue]:
        pairs, out = self._pairs, []
        for key, value in attributes:
            pair = (key, type(value), value)  # the type too: True and 1 are equal keys of a dict
            encoded = pairs.get(pair)
            if encoded is None:
                if len(pairs) >= CACHE_MAX:
                    pairs.clear()
                encoded = pairs[pair] = KeyValue(key=key, value=any_value(value))
            out.append(encoded)
        return out

    def span(self, span: CallSpan) -> Span:
        attributes = span.attributes.items()
        if span.dropped_events:
            attributes = [*attributes, ("mcpwatch.events_dropped", span.dropped_events)]  # type: ignore[assignment]
        status = Status(code=_ERROR, message=span.error) if span.error else _UNSET
        events = [
            Span.Event(name=name, time_unix_nano=ns, attributes=self._attributes(attrs.items()))
            for name, ns, attrs in span.events
        ]
        return Span(
            trace_id=int(span.trace_id, 16).to_bytes(16, "big"),
            span_id=int(span.span_id, 16).to_bytes(8, "big"),
            parent_span_id=int(span.parent_span_id, 16).to_bytes(8, "big") if span.parent_span_id else b"",
            name=span.name,
            kind=_KIND_CLIENT,
            start_time_unix_nano=span.start_ns,
            end_time_unix_nano=span.end_ns,
            attributes=self._attributes(attributes),
            events=events,
            status=status,
            flags=_IS_REMOTE if span.parent_span_id else _HAS_IS_REMOTE,
        )

    def request(self, spans: Iterable[CallSpan]) -> bytes:
        """The serialized ExportTraceServiceRequest for these spans."""
        scope_spans = ScopeSpans(scope=self.scope, spans=[self.span(span) for span in spans])
        message = ExportTraceServiceRequest(
            resource_spans=[ResourceSpans(resource=self.resource, scope_spans=[scope_spans])]
        )
        return message.SerializePartialToString()
