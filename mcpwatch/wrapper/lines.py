"""Newline-delimited framing over asyncio pipes, with a hard cap on line length.

A line longer than the cap is discarded up to its newline and reported, never buffered without bound.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_LINE_BYTES = 16 * 1024 * 1024


class LineSplitter:
    """Feed bytes, get complete lines via `on_line`; oversize lines go to `on_oversize(size)` instead."""

    __slots__ = ("_buffer", "_discarded", "_discarding", "_max", "_on_line", "_on_oversize")

    def __init__(
        self,
        on_line: Callable[[bytes], None],
        on_oversize: Callable[[int], None],
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self._on_line = on_line
        self._on_oversize = on_oversize
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False
        self._discarded = 0

    def feed(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._discarding:
                self._discarding = False
                self._on_oversize(self._discarded + end - start)
                self._discarded = 0
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
            self._discarded += rest
        elif len(self._buffer) + rest > self._max:
            self._discarding = True
            self._discarded = len(self._buffer) + rest
            self._buffer.clear()
        else:
            self._buffer += data[start:]

    def _emit(self, line: bytes) -> None:
        if len(line) > self._max:
            self._on_oversize(len(line))
        elif line.strip():
            self._on_line(line)

    def finish(self) -> None:
        """End of stream: a last line without a newline still counts."""
        if self._discarding:
            self._on_oversize(self._discarded)
        elif self._buffer:
            self._emit(bytes(self._buffer))
        self._buffer.clear()
        self._discarding = False
