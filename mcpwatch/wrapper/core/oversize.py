"""Upstream frames the wrapper cannot take (over the size cap, or not decodable) and host frames over the cap:
never buffered, always answered.

A frame over the cap (`[limits] max_frame_mb`) is discarded as it streams past; only its first bytes are kept. Those
usually hold its JSON-RPC id (`{"jsonrpc":"2.0","id":7,...}`), and so does the start of an upstream frame that
cannot be decoded (invalid UTF-8, nested too deeply, broken JSON). That is enough to answer the request waiting for
it at once with an error naming what was wrong, instead of leaving it to its deadline (or for ever).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcpwatch.wrapper.calls.pending import Counters, HostLink, PendingTable
from mcpwatch.wrapper.core.endings import Failures
from mcpwatch.wrapper.core.session import UpstreamSession
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.lines import HEAD_BYTES

UNKNOWN = object()  # the head does not show an id
NOT_AN_ANSWER = object()  # the head shows a request or notification (a `method` before any id)
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]  # public in CPython, absent from typeshed
_raw_decode = json.JSONDecoder().raw_decode
_SPACE = " \t\r\n"


def read_id(head: bytes, *, answer: bool = False) -> Any:
    """The top-level `id` of the JSON object whose text starts with `head`, or UNKNOWN.

    Only the object's own members are read, in order, each value skipped whole: an `"id"` nested inside a params
    or result value is never mistaken for the frame's. A value cut off by the end of the head ends the search.
    With `answer`, only a response's id counts: a `method` member before the id makes the frame a request or a
    notification, which answers nothing (NOT_AN_ANSWER).
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
            if answer and key == "method":
                return NOT_AN_ANSWER
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


class UnusableFrames:
    """The answers to frames the core cannot take, built from the parts they touch: the cap, the upstream session
    (the wrapper's own requests, the upstream's requests to a host), the calls in flight and how they end."""

    def __init__(
        self,
        *,
        cap_bytes: int,
        session: UpstreamSession,
        table: PendingTable,
        failures: Failures,
        counters: Counters,
        garbage: Callable[[str], None],
        warn: Callable[[str], None],
    ) -> None:
        self._cap = cap_bytes
        self._session = session
        self._table = table
        self._failures = failures
        self._counters = counters
        self._garbage = garbage  # the inbound side's rate-limited note of what the upstream sent that is no frame
        self._warn = warn

    def upstream_over_cap(self, size: int, head: bytes, fallback: Any = UNKNOWN) -> None:
        """An upstream frame over the cap: warn, and answer the request it was the answer to at once."""
        self._garbage(f"a line of {describe(size, self._cap)}; discarded")
        text = f"the upstream MCP server's answer was {describe(size, self._cap)}; it was discarded"
        self.answer_unusable(head, fallback, text)

    def upstream_unreadable(self, line: bytes, why: str, fallback: Any = UNKNOWN) -> None:
        """An upstream frame that cannot be decoded (`why` says how): warn, and answer the request it was the answer
        to at once."""
        self._garbage(f"{why}: {frames.text_of(line, 200)}")
        text = f"the upstream MCP server's answer could not be read: {why}; it was discarded"
        self.answer_unusable(line[:HEAD_BYTES], fallback, text)

    def answer_unusable(self, head: bytes, fallback: Any, text: str) -> None:
        """The request an unusable upstream frame answers gets `text` as a JSON-RPC error at once: the response id
        its start shows, else `fallback` (over HTTP, the request whose POST carried it). A frame that shows it is a
        request or notification, or names no request of ours, answers nothing."""
        up_id = read_id(head, answer=True)
        if up_id is UNKNOWN:
            up_id = fallback
        if not isinstance(up_id, int) or isinstance(up_id, bool):
            return  # the wrapper's own ids are integers: this frame answers nothing of ours
        internal = self._session.take_internal(up_id)
        if internal is not None:
            if not internal.done():
                internal.set_exception(ConnectionError(text))
            return
        pending = self._table.get(up_id)
        if pending is not None:
            self._failures.fail_with_error(pending, frames.INTERNAL_ERROR, text)

    def host_over_cap(self, link: HostLink, size: int, head: bytes) -> None:
        """A host frame over the cap: warn, and answer it with its own id when its start shows one."""
        self._counters.host_frame_errors += 1
        self._warn(f"host sent a frame of {describe(size, self._cap)}; discarded")
        request_id = read_id(head)
        request_id = None if request_id is UNKNOWN else request_id
        text = f"Invalid Request: the frame is {describe(size, self._cap)}"
        if request_id is not None and self._session.take_server_request(request_id, link):
            # it was the host's answer to the upstream's own request: the upstream is told instead
            self._session.send_direct(frames.error_response(request_id, frames.INTERNAL_ERROR, text))
            return
        link.send(frames.error_response(request_id, frames.INVALID_REQUEST, text))
