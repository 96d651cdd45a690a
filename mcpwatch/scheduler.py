"""Timers behind one small interface: deadlines run on the event loop in a wrapper and on a manual clock in tests,
where moving time forward fires exactly the timers that are due, in order, with no real waiting."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any, Protocol

from mcpwatch.clock import ManualClock


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """A monotonic time in seconds and a way to run a callback once that time has moved on by `delay`."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Timer: ...


class LoopScheduler:
    """The event loop's own timers and clock (`loop.time`), as the wrapper runs."""

    __slots__ = ("call_later", "time")

    def __init__(self, loop: Any) -> None:
        # Bound methods of the loop itself: no extra call on the hot path of every request.
        self.time: Callable[[], float] = loop.time
        self.call_later: Callable[..., Timer] = loop.call_later


class _ManualTimer:
    __slots__ = ("args", "callback", "cancelled", "due")

    def __init__(self, due: float, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.due = due
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """Time moves only in `advance`; each due timer runs with the clock set to its own due time."""

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock if clock is not None else ManualClock()
        self._heap: list[tuple[float, int, _ManualTimer]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.clock.monotonic()

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
