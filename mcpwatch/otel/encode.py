"""Finished call spans → one OTLP/HTTP traces request body (protobuf wire bytes), straight from `CallSpan`s.

The SDK's way (a `ReadableSpan` per call, then its generic encoder: a message object per attribute, a type check per
value, the resource hashed per span to group spans by it) cost the export thread more than the rest of its work.
Here the resource and scope are encoded once, and an attribute that recurs (the tool, the method, the wrapper's
name, the outcome) is encoded once and its bytes reused; a span is a concatenation of bytes. The result parses to
the same request the SDK's encoder makes (tests/unit/test_otel_encode.py compares them).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from mcpwatch.otel.spans import AttributeValue, CallShape, CallSpan, PlainRecord, PlainSpan, Span

CACHE_MAX = 4096  # distinct (key, value) pairs kept encoded; past it the cache starts again
PAIR_BYTES_MAX = 1024  # a longer pair (a host's tool name in megabytes) is encoded each time: 4 MiB kept at most
PER_CALL = frozenset({"jsonrpc.request.id", "mcpwatch.upstream.request_id"})
"""Attributes whose value is new with every call: encoded each time, never cached (they would only evict)."""
_KIND_CLIENT = b"\x30\x03"  # Span.kind (6) = SPAN_KIND_CLIENT
_FLAGS_LOCAL = b"\x85\x01" + struct.pack("<I", 0x100)  # flags (16, fixed32): HAS_IS_REMOTE
_FLAGS_REMOTE_PARENT = b"\x85\x01" + struct.pack("<I", 0x300)  # HAS_IS_REMOTE | IS_REMOTE
_STATUS_UNSET = b"\x7a\x00"  # status (15): an empty Status, as the SDK sends for an unset one
_STATUS_ERROR_CODE = b"\x18\x02"  # Status.code (3) = STATUS_CODE_ERROR
_fixed64 = struct.Struct("<Q").pack
_double = struct.Struct("<d").pack
_fromhex = bytes.fromhex  # bound once: read for every plain span's two ids (`SpanEncoder.record_field`)
_times = struct.Struct("<QBQ").pack  # a span's start, the end's tag (8: fixed64), its end


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]  # every length under 128: most fields of a span


def _varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if 0 < value < 0x4000:  # two bytes: a span's length, most of a batch's fields
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if 0 < value < 0x200000:  # three: an upstream id after the first 16,384 calls
        return bytes(((value & 0x7F) | 0x80, (value >> 7 & 0x7F) | 0x80, value >> 14))
    value &= (1 << 64) - 1  # int64: a negative is its two's complement in ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field."""
    return tag + _varint(len(payload)) + payload


def _text(tag: bytes, text: str) -> bytes:
    try:
        return _field(tag, text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate (legal in JSON): as U+FFFD, or the collector refuses the batch
        return _field(tag, utf8_text(text).encode("utf-8"))


def utf8_text(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD (a proto3 string must be UTF-8) and a split pair joined."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _id(hex_id: str, size: int) -> bytes:
    """A trace or span id's bytes: the usual hex of its size as it is, any other (a shorter one) read as a number."""
    try:
        raw = _fromhex(hex_id)
    except ValueError:
        raw = b""
    return raw if len(raw) == size else int(hex_id, 16).to_bytes(size, "big")


def any_value(value: AttributeValue) -> bytes:
    """One attribute value as OTLP's AnyValue (bool before int: a bool is an int in Python)."""
    if isinstance(value, bool):
        return b"\x10" + (b"\x01" if value else b"\x00")
    if isinstance(value, str):
        return _text(b"\x0a", value)
    if isinstance(value, int):
        if -_INT64 <= value < _INT64:
            return b"\x18" + _varint(value)
        return b"\x21" + _double(_as_float(value))  # an upstream's progress of 10**30: as a number, not wrapped
    return b"\x21" + _double(float(value))


_INT64 = 1 << 63


def _as_float(value: int) -> float:
    """An int past int64 as OTLP's double (int_value would wrap it into another number), infinite past a double."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def key_value(key: str, value: AttributeValue) -> bytes:
    """A KeyValue message's bytes."""
    return _text(b"\x0a", key) + _field(b"\x12", any_value(value))


_PER_CALL_KEYS = {key: _text(b"\x0a", key) + b"\x12" for key in PER_CALL}  # each KeyValue's key and value tag
_OUTCOME_OK = _field(b"\x4a", key_value("mcpwatch.outcome", "ok"))  # a span attribute (9): how a plain call ends


def _per_call(tag: bytes, key: str, value: AttributeValue) -> bytes:
    """An attribute whose value is new with every call, as a `tag` field: the key's bytes made once."""
    small = type(value) is int and 0 <= value < 0x80  # an int, checked first
    encoded_value = b"\x18" + _ONE_BYTE[value] if small else any_value(value)  # type: ignore[index]  # small: an int
    kv = _PER_CALL_KEYS[key] + _varint(len(encoded_value)) + encoded_value
    return tag + _varint(len(kv)) + kv


_ID_SHORT = 100  # a request id's UTF-8 bytes under this: its whole field's head is one of `_REQUEST_ID_HEADS`
_REQUEST_ID_HEADS = [
    b"\x4a"
    + _varint(len(_PER_CALL_KEYS["jsonrpc.request.id"]) + 3 + n)  # attributes (9): the KeyValue's length
    + _PER_CALL_KEYS["jsonrpc.request.id"]  # its key, and the value's tag
    + _varint(2 + n)  # the AnyValue's length
    + b"\x0a"  # string_value (1)
    + _varint(n)
    for n in range(_ID_SHORT)
]
_UP_ID_HEADS = [  # by the varint's length (1 to 10 bytes): the field's head up to the AnyValue's int_value tag
    b"\x4a"
    + _varint(len(_PER_CALL_KEYS["mcpwatch.upstream.request_id"]) + 2 + n)
    + _PER_CALL_KEYS["mcpwatch.upstream.request_id"]
    + _varint(1 + n)
    + b"\x18"  # int_value (3)
    for n in range(11)
]
_UP_ID_HEAD_2, _UP_ID_HEAD_3 = _UP_ID_HEADS[2], _UP_ID_HEADS[3]
_SPAN_HEADS_MAX = 2048
_SPAN_HEADS = [b"\x12" + _varint(n) for n in range(_SPAN_HEADS_MAX)]  # a span field's head by its length
_BYTES = {bytes}
_PLAIN_TAIL = _OUTCOME_OK + _STATUS_UNSET + _FLAGS_LOCAL
_PLAIN_TAIL_REMOTE = _OUTCOME_OK + _STATUS_UNSET + _FLAGS_REMOTE_PARENT


def _request_id_field(request_id: str) -> bytes:
    """`_per_call(b"\x4a", "jsonrpc.request.id", request_id)`, its head taken ready-made for a short id."""
    try:
        raw = request_id.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the general way replaces it
        return _per_call(b"\x4a", "jsonrpc.request.id", request_id)
    if len(raw) < _ID_SHORT:
        return _REQUEST_ID_HEADS[len(raw)] + raw
    return _per_call(b"\x4a", "jsonrpc.request.id", request_id)


def _up_id_field(up_id: int | None) -> bytes:
    """`_per_call(b"\x4a", "mcpwatch.upstream.request_id", up_id)` for an int (b"" for None)."""
    if up_id is None:
        return b""
    if type(up_id) is not int or not -_INT64 <= up_id < _INT64:  # a bool is a bool value to OTLP; past int64, a
        return _per_call(b"\x4a", "mcpwatch.upstream.request_id", up_id)  # double (a varint would wrap it)
    value = _varint(up_id)
    return _UP_ID_HEADS[len(value)] + value


class SpanEncoder:
    """Encodes batches of `CallSpan`s for one resource and instrumentation scope."""

    def __init__(self, resource: Mapping[str, Any], scope_name: str, scope_version: str) -> None:
        attributes = b"".join(_field(b"\x0a", key_value(k, v)) for k, v in resource.items())
        self.resource = _field(b"\x0a", attributes)  # ResourceSpans.resource (1)
        self.scope = _field(b"\x0a", _text(b"\x0a", scope_name) + _text(b"\x12", scope_version))  # ScopeSpans.scope
        self._pairs: dict[tuple[str, type, AttributeValue], bytes] = {}

    def _attributes(self, tag: bytes, attributes: Iterable[tuple[str, AttributeValue]]) -> bytes:
        """Each attribute as a `tag` field holding its KeyValue."""
        pairs, out = self._pairs, []
        for key, value in attributes:
            if key in PER_CALL:  # the key's bytes made once, the value's each time
                out.append(_per_call(tag, key, value))
                continue
            pair = (key, type(value), value)  # the type too: True and 1 are equal keys of a dict
            encoded = pairs.get(pair)
            if encoded is None:
                encoded = _field(tag, key_value(key, value))
                if len(encoded) <= PAIR_BYTES_MAX:
                    if len(pairs) >= CACHE_MAX:
                        pairs.clear()
                    pairs[pair] = encoded
            out.append(encoded)
        return b"".join(out)

    def span(self, span: CallSpan) -> bytes:
        """A Span message's bytes."""
        attributes: Iterable[tuple[str, AttributeValue]] = span.attributes.items()
        if span.dropped_events:
            attributes = [*attributes, ("mcpwatch.events_dropped", span.dropped_events)]
        parts = [
            b"\x0a\x10" + _id(span.trace_id, 16),  # trace_id (1)
            b"\x12\x08" + _id(span.span_id, 8),  # span_id (2)
        ]
        if span.parent_span_id:
            parts.append(b"\x22\x08" + _id(span.parent_span_id, 8))  # parent_span_id (4)
        parts += [
            _text(b"\x2a", span.name),  # name (5)
            _KIND_CLIENT,
            b"\x39" + _fixed64(span.start_ns),  # start_time_unix_nano (7)
            b"\x41" + _fixed64(span.end_ns),  # end_time_unix_nano (8)
            self._attributes(b"\x4a", attributes),  # attributes (9)
        ]
        for name, ns, attrs in span.events:  # events (11): time (1), name (2), attributes (3)
            event = b"\x09" + _fixed64(ns) + _text(b"\x12", name) + self._attributes(b"\x1a", attrs.items())
            parts.append(_field(b"\x5a", event))
        if span.error:
            parts.append(_field(b"\x7a", _text(b"\x12", span.error) + _STATUS_ERROR_CODE))
        else:
            parts.append(_STATUS_UNSET)
        parts.append(_FLAGS_REMOTE_PARENT if span.parent_span_id else _FLAGS_LOCAL)
        return b"".join(parts)

    def plain(self, span: PlainSpan) -> bytes:
        """A plain call's Span message: the same bytes as `span(span.full())`, the shape's parts encoded once."""
        shape = span.shape
        name, head, middle, _, _ = shape.encoded or self._shape(shape)
        parts = [b"\x0a\x10" + _id(span.trace_id, 16), b"\x12\x08" + _id(span.span_id, 8)]
        if span.parent_span_id:
            parts.append(b"\x22\x08" + _id(span.parent_span_id, 8))
        parts += [
            name,
            _KIND_CLIENT,
            b"\x39" + _fixed64(span.start_ns),
            b"\x41" + _fixed64(span.end_ns),
            head,
            _per_call(b"\x4a", "jsonrpc.request.id", span.request_id),
            middle,
        ]
        if span.up_id is not None:
            parts.append(_per_call(b"\x4a", "mcpwatch.upstream.request_id", span.up_id))
        parts += [_OUTCOME_OK, _STATUS_UNSET, _FLAGS_REMOTE_PARENT if span.parent_span_id else _FLAGS_LOCAL]
        return b"".join(parts)

    def _plain_field(self, span: PlainSpan) -> bytes:
        """`plain(span)` as a ScopeSpans.spans field (2)."""
        record = (
            span.shape,
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            span.start_ns,
            span.request_id,
            span.up_id,
        )
        return self.record_field(record, span.end_ns)

    def record_field(self, record: PlainRecord, end_ns: int) -> bytes:
        """`plain(PlainSpan(*record, end_ns))` as a ScopeSpans.spans field (2), in one join: what a batch holds per
        plain call. The span's length is known before its bytes are (its shape's fixed part, its request id's and
        upstream id's fields), so they are joined once, behind their field's head."""
        shape, trace_id, span_id, parent, start_ns, request_id, up_id = record
        _, head, middle, lead, fixed = shape.encoded or self._shape(shape)
        ids = b""
        if parent is None and len(trace_id) == 32 and len(span_id) == 16:
            try:  # the usual ids at once (whitespace, which `fromhex` skips, leaves them short)
                ids = _fromhex(f"0a10{trace_id}1208{span_id}")
            except ValueError:
                pass
        if len(ids) != 28:
            ids = b"\x0a\x10" + _id(trace_id, 16) + b"\x12\x08" + _id(span_id, 8)
            if parent:
                ids += b"\x22\x08" + _id(parent, 8)
        try:  # `_request_id_field`, inline for a short id: its head made once, then its bytes
            raw = request_id.encode("utf-8")
            request_head = _REQUEST_ID_HEADS[len(raw)]
        except (UnicodeEncodeError, IndexError):
            request_head, raw = b"", _request_id_field(request_id)
        if type(up_id) is not int or not 0x7F < up_id < 0x200000:
            up_head, up_value = b"", _up_id_field(up_id)
        elif up_id < 0x4000:  # `_up_id_field`, its varint inline: two bytes for the first 16,384 calls, then three
            up_head, up_value = _UP_ID_HEAD_2, bytes(((up_id & 0x7F) | 0x80, up_id >> 7))
        else:
            up_head, up_value = _UP_ID_HEAD_3, bytes(((up_id & 0x7F) | 0x80, (up_id >> 7 & 0x7F) | 0x80, up_id >> 14))
        size = fixed + len(ids) + len(request_head) + len(raw) + len(up_head) + len(up_value)
        return b"".join(
            (
                _SPAN_HEADS[size] if size < _SPAN_HEADS_MAX else b"\x12" + _varint(size),
                ids,
                lead,
                _times(start_ns, 0x41, end_ns),
                head,
                request_head,
                raw,
                middle,
                up_head,
                up_value,
                _PLAIN_TAIL_REMOTE if parent else _PLAIN_TAIL,
            )
        )

    def _shape(self, shape: CallShape) -> tuple[bytes, bytes, bytes, bytes, int]:
        name = _text(b"\x2a", shape.name)
        head = self._attributes(b"\x4a", shape.head.items())
        middle = self._attributes(b"\x4a", shape.middle.items())
        lead = name + _KIND_CLIENT + b"\x39"  # the times follow (`_times`), then the head
        fixed = len(lead) + 17 + len(head) + len(middle) + len(_PLAIN_TAIL)
        encoded = shape.encoded = (name, head, middle, lead, fixed)
        return encoded

    def request(self, spans: Iterable[Span]) -> bytes:
        """The serialized ExportTraceServiceRequest for these spans (a plain one's field may be encoded already)."""
        plain, full = self._plain_field, self.span
        if not isinstance(spans, list) or set(map(type, spans)) - _BYTES:  # not all encoded as they ended
            fields = b"".join(
                span if type(span) is bytes else plain(span) if type(span) is PlainSpan else _field(b"\x12", full(span))  # type: ignore[arg-type]  # `type(...) is` does not narrow
                for span in spans
            )
        else:
            fields = b"".join(spans)  # all bytes
        scope_size = len(self.scope) + len(fields)  # ScopeSpans: its scope, then the spans
        scope_head = b"\x12" + _varint(scope_size)  # ResourceSpans.scope_spans (2)
        resource_size = len(self.resource) + len(scope_head) + scope_size
        # one copy of the spans' bytes, not one per enclosing message
        return b"".join((b"\x0a", _varint(resource_size), self.resource, scope_head, self.scope, fields))
