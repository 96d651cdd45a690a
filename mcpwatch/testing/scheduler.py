"""A scheduler on a manual clock, for tests: time moves only when a test says so, and moving it fires exactly the
timers that are due, in order, with no real waiting (the `Scheduler` protocol of `mcpwatch.scheduler`)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from mcpwatch.clock import ManualClock


def _nothing(*_: Any) -> None:
    return None


class _ManualTimer:
    __slots__ = ("args", "callback", "cancelled", "due")

    def __init__(self, due: float, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.due = due
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        """As the loop's own timers: what it would have called is let go at once, not when it would have run."""
        self.cancelled = True
        self.callback, self.args = _nothing, ()


class ManualScheduler:
    """Time moves only in `advance`; each due timer runs with the clock set to its own due time."""

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock if clock is not None else ManualClock()
        self.time: Callable[[], float] = self.clock.monotonic  # bound once, as the loop's scheduler binds its clock
        self._heap: list[tuple[float, int, _ManualTimer]] = []
        self._order = itertools.count()

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> _ManualTimer:
        timer = _ManualTimer(self.time() + max(0.0, delay), callback, args)
        heapq.heappush(self._heap, (timer.due, next(self._order), timer))
        return timer

    @property
    def pending(self) -> int:
        """Timers still to run (cancelled ones excluded)."""
        return sum(1 for _, _, timer in self._heap if not timer.cancelled)

    def next_due_in(self) -> float | None:
        """Seconds until the next live timer, or None when there is none."""
        live = [timer.due for _, _, timer in self._heap if not timer.cancelled]
        return None if not live else max(0.0, min(live) - self.time())

    def advance(self, seconds: float) -> int:
        """Move time on by `seconds`, running every timer that falls due on the way; returns how many ran."""
        if seconds < 0:
            raise ValueError(f"time only moves forward, got {seconds!r}")
        target = self.time() + seconds
        ran = 0
        while self._heap and self._heap[0][0] <= target:
            due, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self.clock.advance(max(0.0, due - self.time()))
            ran += 1
            timer.callback(*timer.args)
        self.clock.advance(max(0.0, target - self.time()))
        return ran
