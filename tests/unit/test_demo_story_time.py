"""A headless demo run ends at its --duration, but not before its story had time to happen: a slow start-up (four
Python processes one after the other on a loaded machine) once left a 20 s run with no deadline at all."""

from __future__ import annotations

import asyncio

from mcpwatch.demo import run as demo_run
from mcpwatch.demo.driver import DriverStats


def test_the_run_waits_for_the_story_after_a_late_first_call(monkeypatch) -> None:
    monkeypatch.setattr(demo_run, "STORY_S", 30.0)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        stats, stop = DriverStats(), asyncio.Event()
        stats.first_call_at = loop.time()  # the first call went out just as --duration ran out
        ending = loop.create_task(demo_run._end_after_the_story(stats, stop, 0.0))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not stop.is_set()  # the story is still to come
        stats.first_call_at = loop.time() - 31.0  # …and now it has had its time
        await asyncio.wait_for(ending, 10)
        assert stop.is_set()

    asyncio.run(scenario())


def test_a_run_whose_calls_never_start_still_ends(monkeypatch) -> None:
    monkeypatch.setattr(demo_run, "STORY_GRACE_S", 0.0)

    async def scenario() -> None:
        stats, stop = DriverStats(), asyncio.Event()
        await asyncio.wait_for(demo_run._end_after_the_story(stats, stop, 0.0), 10)
        assert stop.is_set() and stats.first_call_at is None

    asyncio.run(scenario())
