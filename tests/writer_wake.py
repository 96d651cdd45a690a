"""The log writer's wake event, counted: the tests of its wakeups and of an idle wrapper's sleep watch the writer
through it (`EventWriter.wake_factory`), never through time."""

from __future__ import annotations

import threading
from typing import ClassVar

from mcpwatch.events import Event, Kind


class CountingWake(threading.Event):
    """Counts `set()` calls (each a lock handoff from the loop's thread) and notes each wait's timeout; `asleep` is
    set while the writer waits with none."""

    made: ClassVar[list[CountingWake]] = []

    def __init__(self) -> None:
        super().__init__()
        self.sets = 0
        self.timeouts: list[float | None] = []
        self.asleep = threading.Event()
        CountingWake.made.append(self)

    def set(self) -> None:
        self.sets += 1
        super().set()

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        if timeout is None:
            self.asleep.set()
        try:
            return super().wait(timeout)
        finally:
            self.asleep.clear()


def warning(sid: str, seq: int) -> Event:
    """A small event of session `sid` numbered `seq`."""
    return Event(Kind.WARNING, sid, 1e9 + seq, seq, seq, None, None, None, {"message": f"m{seq}"})
