"""Timers behind one small interface: deadlines run on the event loop in a wrapper and, in tests, on
`mcpwatch.testing.scheduler.ManualScheduler`, where moving time forward fires exactly the timers that are due, in
order, with no real waiting."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """A monotonic time in seconds and a way to run a callback once that time has moved on by `delay`."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Timer: ...


class LoopScheduler:
    """The event loop's own timers and the system's monotonic clock, as the wrapper runs.

    Not `loop.time`: uvloop's is libuv's millisecond clock, so a call shorter than a millisecond would be logged as
    taking 0.0 s. `time.monotonic` is the clock libuv and asyncio count from (CLOCK_MONOTONIC on Linux), in
    nanoseconds; the timers take delays, so they are unaffected."""

    __slots__ = ("call_later", "time")

    def __init__(self, loop: Any) -> None:
        # Bound methods: no extra call on the hot path of every request.
        self.time: Callable[[], float] = time.monotonic
        self.call_later: Callable[..., Timer] = loop.call_later
