"""W3C trace context for forwarded requests (the MCP conventions carry it unprefixed in `params._meta`).

The wrapper's span for a request is a child of the host's span when the host sent a `traceparent`, else the root
of a new trace; either way the upstream receives the wrapper's span as its parent, so its own spans join the trace.
`tracestate` and `baggage` pass through untouched. This runs on the message pump, so it is a few string operations.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from itertools import chain
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


IDS_AT_ONCE = 256
"""New traces' ids drawn at once: one draw, made hex once and cut in C, so a call takes its pair with one `next`
(this runs on the loop for every exported call; drawing each pair cost five times as much)."""
_PAIRS = re.compile(r"(.{32})(.{16})")


def _draw_ids() -> list[tuple[str, str]]:
    """`IDS_AT_ONCE` (trace id, span id) pairs from one draw, none of them all zeros (invalid): a block that holds
    sixteen zeros in a row anywhere (about one in 10**16) is sorted, pair by pair."""
    digits = random.getrandbits(192 * IDS_AT_ONCE).to_bytes(24 * IDS_AT_ONCE, "big").hex()
    pairs: list[tuple[str, str]] = _PAIRS.findall(digits)
    if _ZERO_SPAN in digits:
        pairs = [(trace, span) for trace, span in pairs if trace != _ZERO_TRACE and span != _ZERO_SPAN]
    return pairs


def restart_ids() -> None:
    """Draw the next ids from the random generator's state now (after `random.seed`, the same ids again)."""
    global _ids
    _ids = chain.from_iterable(iter(_draw_ids, None))


_ids: Iterator[tuple[str, str]]
restart_ids()


def _new_ids() -> tuple[str, str]:
    """A new trace's id and its first span's."""
    return next(_ids)


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
    trace_id, span_id = next(_ids)  # `_new_ids`, inline
    meta[TRACEPARENT] = f"00-{trace_id}-{span_id}-01"
    return trace_id, span_id
