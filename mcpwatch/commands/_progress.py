"""A progress line on stderr while a command reads a long session (only when stderr is a terminal).

`report` on a 1,000,000-event session reads for several seconds; without a word it looks hung. The line is
redrawn in place at most twice a second, says what the command does once the events are read (working out the
figures), and is erased at the end, so the command's own output stays clean; nothing at all is written when stderr
is a pipe or a file.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from mcpwatch.events import Event

EVERY_S = 0.5


class Progress:
    """One progress line: `reading` while the events stream, `phase` for each step after, `close` erases it."""

    def __init__(self, *, stream: IO[str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._out = sys.stderr if stream is None else stream
        self._on = self._out.isatty()
        self._clock = clock
        self.drawn = False

    def _draw(self, text: str) -> None:
        self._out.write(f"\r\x1b[2K{text}")
        self._out.flush()
        self.drawn = True

    def reading(self, events: Iterable[Event], last_seq: int, what: str = "reading the session") -> Iterator[Event]:
        """Yield `events` unchanged, saying how far through the session (by `seq`, up to `last_seq`) they are."""
        if not self._on or last_seq <= 0:
            yield from events
            return
        shown_at = self._clock()
        for event in events:
            yield event
            now = self._clock()
            if now - shown_at >= EVERY_S:
                shown_at = now
                share = min(1.0, event.seq / last_seq)
                self._draw(f"{what}: {event.seq:,} of {last_seq:,} events ({share:.0%})")

    def phase(self, text: str) -> None:
        """A step after the read (only once the line is up: a quick command stays silent)."""
        if self._on and self.drawn:
            self._draw(text)

    def close(self) -> None:
        if self.drawn:
            self._out.write("\r\x1b[2K")  # erase the line: the output starts on a clean one
            self._out.flush()
            self.drawn = False


def reading(
    events: Iterable[Event],
    last_seq: int,
    what: str = "reading the session",
    *,
    stream: IO[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Event]:
    """`Progress.reading`, erased as soon as the events are read."""
    progress = Progress(stream=stream, clock=clock)
    try:
        yield from progress.reading(events, last_seq, what)
    finally:
        progress.close()
