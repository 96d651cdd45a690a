"""The wrapper's clock keeps microseconds: a call shorter than a millisecond is not logged as 0.0 s.

uvloop's `loop.time()` counts whole milliseconds; the scheduler the wrapper runs on must not take durations from it.
Counted, not timed: the readings taken while the clock moves on by 3 ms are many distinct values, not three or four.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpwatch.scheduler import LoopScheduler


def _distinct_readings(scheduler: LoopScheduler) -> int:
    seen = set()
    end = time.monotonic() + 0.003
    while time.monotonic() < end:
        seen.add(scheduler.time())
    return len(seen)


def _loops() -> list[str]:
    names = ["asyncio"]
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return names
    return [*names, "uvloop"]


@pytest.mark.parametrize("kind", _loops())
def test_loop_scheduler_time_has_sub_millisecond_resolution(kind: str) -> None:
    loop: asyncio.AbstractEventLoop
    if kind == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    try:
        scheduler = LoopScheduler(loop)
        assert _distinct_readings(scheduler) > 20  # a millisecond clock gives at most 4
        # the same clock the loop's timers count from: within a millisecond of it
        assert abs(scheduler.time() - loop.time()) < 0.01
    finally:
        loop.close()
