"""W3C trace context for forwarded requests (the MCP conventions carry it unprefixed in `params._meta`).

The wrapper's span for a request is a child of the host's span when the host sent a `traceparent`, else the root
of a new trace; either way the upstream receives the wrapper's span as its parent, so its own spans join the trace.
`tracestate` and `baggage` pass through untouched. This runs on the message pump, so it is a few string operations.
"""

from __future__ import annotations

import random
import re
from typing import Any

TRACEPARENT = "traceparent"
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def _random_hex(bits: int) -> str:
    value = 0
    while value == 0:  # all-zero ids are invalid
        value = random.getrandbits(bits)
    return f"{value:0{bits // 4}x}"


def parent_of(meta: Any) -> tuple[str, str, str] | None:
    """(trace id, parent span id, flags) from a valid host `traceparent`, else None."""
    value = meta.get(TRACEPARENT) if isinstance(meta, dict) else None
    match = _TRACEPARENT.fullmatch(value) if isinstance(value, str) else None
    if match is None or match[1] == "ff" or match[2] == _ZERO_TRACE or match[3] == _ZERO_SPAN:
        return None
    return match[2], match[3], match[4]


_SPAN_MASK = (1 << 64) - 1


def _new_ids() -> tuple[str, str]:
    """A new trace's id and its first span's, drawn at once (one 192-bit draw, made hex once: this runs on the loop
    for every exported call); neither is all zeros (invalid)."""
    bits = random.getrandbits(192)
    while not (bits >> 64 and bits & _SPAN_MASK):
        bits = random.getrandbits(192)
    both = bits.to_bytes(24, "big").hex()
    return both[:32], both[32:]


def stamp(params: dict[str, Any]) -> dict[str, str]:
    """Give the forwarded request's params a `traceparent` naming a new wrapper span; returns the ids for the
    `request_start` event (`trace_id`, `span_id`, and `parent_span_id` when the host sent one)."""
    meta = params.get("_meta")
    parent = parent_of(meta)
    if parent is None:
        trace_id, span_id = _new_ids()
        flags = "01"
        ids = {"trace_id": trace_id, "span_id": span_id}
    else:
        trace_id, parent_id, flags = parent
        span_id = _random_hex(64)
        ids = {"trace_id": trace_id, "span_id": span_id, "parent_span_id": parent_id}
    params["_meta"] = {**(meta if isinstance(meta, dict) else {}), TRACEPARENT: f"00-{trace_id}-{span_id}-{flags}"}
    return ids


def stamp_own(meta: dict[str, Any]) -> tuple[str, str]:
    """`stamp` for a request whose `_meta` the wrapper has just made itself (a plain call's: no host `traceparent`):
    the span's ids drawn as `stamp` draws them (so a seeded run gives the same ids either way), the `traceparent`
    added to `meta` in place, with no copy (this runs on the loop for every exported plain call: `docs/benchmarks.md`,
    the loop's extra with export). Returns the trace's and the span's id, a tuple: the caller names them."""
    bits = random.getrandbits(192)  # `_new_ids`, inline
    while not (bits >> 64 and bits & _SPAN_MASK):
        bits = random.getrandbits(192)
    both = bits.to_bytes(24, "big").hex()
    trace_id, span_id = both[:32], both[32:]
    meta[TRACEPARENT] = f"00-{trace_id}-{span_id}-01"
    return trace_id, span_id
