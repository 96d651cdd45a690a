"""Newline-delimited framing over asyncio pipes, with a hard cap on line length.

A line longer than the cap is reported the moment it crosses the cap, with the bytes seen so far and its first bytes
(where a JSON-RPC id usually is, so the request waiting for it is answered at once, even if the line never ends),
then discarded up to its newline: never buffered without bound.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_LINE_BYTES = 16 * 1024 * 1024
HEAD_BYTES = 64 * 1024  # what is kept of a discarded line


class LineSplitter:
    """Feed bytes, get complete lines via `on_line`; oversize lines go to `on_oversize(size, head)` instead (size:
    the bytes seen when the line crossed the cap, or its whole size when it arrived in one piece)."""

    __slots__ = ("_buffer", "_discarding", "_max", "_on_line", "_on_oversize")

    def __init__(
        self,
        on_line: Callable[[bytes], None],
        on_oversize: Callable[[int, bytes], None],
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self._on_line = on_line
        self._on_oversize = on_oversize
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._discarding:
                self._discarding = False  # reported when it crossed the cap
            elif self._buffer:
                self._buffer += data[start:end]
                line = bytes(self._buffer)
                self._buffer.clear()
                self._emit(line)
            else:
                self._emit(data[start:end])
            start = end + 1
        rest = len(data) - start
        if not rest:
            return
        if self._discarding:
            return
        if len(self._buffer) + rest > self._max:
            self._discarding = True
            head = bytes(self._buffer[:HEAD_BYTES]) + data[start : start + HEAD_BYTES - len(self._buffer)]
            size = len(self._buffer) + rest
            self._buffer.clear()
            self._on_oversize(size, head)
        else:
            self._buffer += data[start:]

    def _emit(self, line: bytes) -> None:
        if len(line) > self._max:
            self._on_oversize(len(line), line[:HEAD_BYTES])
        elif line.strip():
            self._on_line(line)

    def finish(self) -> None:
        """End of stream: a last line without a newline still counts."""
        if self._buffer and not self._discarding:
            self._emit(bytes(self._buffer))
        self._buffer.clear()
        self._discarding = False
