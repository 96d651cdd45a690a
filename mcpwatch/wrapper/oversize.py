"""Frames over the size cap (`[limits] max_frame_mb`), either way: never buffered, always answered.

A frame over the cap is discarded as it streams past; only its first bytes are kept. Those usually hold its
JSON-RPC id (`{"jsonrpc":"2.0","id":7,...}`), which is enough to answer the request waiting for it at once with an
error naming the size and the cap, instead of leaving it to its deadline (or for ever).
"""

from __future__ import annotations

import json
from typing import Any

from mcpwatch.wrapper import frames

UNKNOWN = object()  # the head does not show an id
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]
_raw_decode = json.JSONDecoder().raw_decode
_SPACE = " \t\r\n"


def read_id(head: bytes) -> Any:
    """The top-level `id` of the JSON object whose text starts with `head`, or UNKNOWN.

    Only the object's own members are read, in order, each value skipped whole: an `"id"` nested inside a params
    or result value is never mistaken for the frame's. A value cut off by the end of the head ends the search.
    """
    text = head.decode("utf-8", "ignore")
    index = _skip_space(text, 0)
    if not text.startswith("{", index):
        return UNKNOWN
    index += 1
    try:
        while True:
            index = _skip_space(text, index)
            if not text.startswith('"', index):
                return UNKNOWN
            key, index = _scan_string(text, index + 1)
            index = _skip_space(text, index)
            if not text.startswith(":", index):
                return UNKNOWN
            value, index = _raw_decode(text, _skip_space(text, index + 1))
            if index >= len(text):
                return UNKNOWN  # the value may go on beyond the head (a number cut short)
            if key == "id":
                return value if frames.valid_id(value) and value is not None else UNKNOWN
            index = _skip_space(text, index)
            if not text.startswith(",", index):
                return UNKNOWN
            index += 1
    except (ValueError, RecursionError):
        return UNKNOWN  # a value cut off by the end of the head, or not JSON at all


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in _SPACE:
        index += 1
    return index


def describe(size: int, cap_bytes: int) -> str:
    """The size (what had arrived when the frame crossed the cap: it may never end) and the cap, as the error message
    and the warning say them."""
    return f"at least {size} bytes, over the frame limit of {cap_bytes // (1024 * 1024)} MB ([limits] max_frame_mb)"


def upstream_frame_over_cap(core: Any, size: int, head: bytes, up_id: Any = UNKNOWN) -> None:
    """An upstream frame over the cap: warn, and answer the request it was the answer to (by its id) at once."""
    cap = core.settings.limits.max_frame_bytes
    core.inbound.garbage(f"a line of {describe(size, cap)}; discarded")
    if up_id is UNKNOWN:
        up_id = read_id(head)
    if not isinstance(up_id, int) or isinstance(up_id, bool):
        return  # the wrapper's own ids are integers: this frame answers nothing of ours
    text = f"the upstream MCP server's answer was {describe(size, cap)}; it was discarded"
    internal = core.session.take_internal(up_id)
    if internal is not None:
        if not internal.done():
            internal.set_exception(ConnectionError(text))
        return
    pending = core.table.get(up_id)
    if pending is not None:
        core.endings.fail_with_error(pending, frames.INTERNAL_ERROR, text)


def host_frame_over_cap(core: Any, link: Any, size: int, head: bytes) -> None:
    """A host frame over the cap: warn, and answer it with its own id when its start shows one."""
    cap = core.settings.limits.max_frame_bytes
    core.count_frame_error()
    core.warn(f"host sent a frame of {describe(size, cap)}; discarded")
    request_id = read_id(head)
    request_id = None if request_id is UNKNOWN else request_id
    text = f"Invalid Request: the frame is {describe(size, cap)}"
    if request_id is not None and core.session.take_server_request(request_id, link):
        # it was the host's answer to the upstream's own request: the upstream is told instead
        core.session.send_direct(frames.error_response(request_id, frames.INTERNAL_ERROR, text))
        return
    link.send(frames.error_response(request_id, frames.INVALID_REQUEST, text))
