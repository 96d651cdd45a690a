"""A progress line on stderr while a command reads a long session (only when stderr is a terminal).

`report` on a 1,000,000-event session reads for several seconds; without a word it looks hung. The line is
redrawn in place at most twice a second and erased at the end, so the command's own output stays clean, and
nothing at all is written when stderr is a pipe or a file.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from mcpwatch.events import Event

EVERY_S = 0.5


def reading(
    events: Iterable[Event],
    last_seq: int,
    what: str = "reading the session",
    *,
    stream: IO[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Event]:
    """Yield `events` unchanged, saying how far through the session (by `seq`, up to `last_seq`) they are."""
    out = sys.stderr if stream is None else stream
    if not out.isatty() or last_seq <= 0:
        yield from events
        return
    shown_at = clock()
    drawn = False
    try:
        for event in events:
            yield event
            now = clock()
            if now - shown_at >= EVERY_S:
                shown_at = now
                share = min(1.0, event.seq / last_seq)
                out.write(f"\r{what}: {event.seq:,} of {last_seq:,} events ({share:.0%})")
                out.flush()
                drawn = True
    finally:
        if drawn:
            out.write("\r\x1b[2K")  # erase the line: the report starts on a clean one
            out.flush()
