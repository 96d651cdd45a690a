"""A headless demo run ends at its --duration, but not before its story is in the log: a slow start-up on a loaded
machine once left a 20 s run with no deadline at all. It waits on what the log says, not on a usual duration."""

from __future__ import annotations

import asyncio

from mcpwatch.demo import run as demo_run


def test_the_run_waits_for_the_story_past_its_duration(monkeypatch) -> None:
    monkeypatch.setattr(demo_run, "STORY_POLL_S", 0.0)
    told = {"yet": False}
    asked: list[bool] = []

    def story_told() -> bool:
        asked.append(told["yet"])
        return told["yet"]

    async def scenario() -> None:
        stop = asyncio.Event()
        ending = asyncio.get_running_loop().create_task(demo_run._end_after_the_story(story_told, stop, 0.0))
        while len(asked) < 3:
            await asyncio.sleep(0)
        assert not stop.is_set()  # --duration is over, the story is still to come
        told["yet"] = True
        await asyncio.wait_for(ending, 10)
        assert stop.is_set() and asked[-1] is True

    asyncio.run(scenario())


def test_a_run_whose_story_never_comes_still_ends(monkeypatch) -> None:
    monkeypatch.setattr(demo_run, "STORY_GRACE_S", 0.0)

    async def scenario() -> None:
        stop = asyncio.Event()
        await asyncio.wait_for(demo_run._end_after_the_story(lambda: False, stop, 0.0), 10)
        assert stop.is_set()

    asyncio.run(scenario())
