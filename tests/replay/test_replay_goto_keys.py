"""The go-to prompt takes every key typed after `g`, however fast or loaded (as the console's seconds prompts do).

Keys are sent straight to the app's driver, all at once, without waiting for the prompt to mount — as a
terminal delivers them when the machine is busy. A time typed right after `g` must reach the prompt whole,
in order (a backspace before the digit typed after it), and never the screen behind it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import make_feed, ready

from mcpwatch.console.screens.modals import TypedAheadPrompt
from mcpwatch.replay.app import GotoPrompt, ReplayApp

from pilot_tools import slow_frames, type_at_once, until

pytestmark = pytest.mark.anyio

SIZE = (100, 30)  # the keys' path is the same at any size; 160×48 drew 0.35 CPU-s more a run
# 1:31 corrected to 1:30: backspace must act before the digit typed after it
TIME = ["1", "colon", "3", "1", "backspace", "0"]


async def test_a_time_typed_faster_than_the_prompt_mounts_is_gone_to(shared_log: tuple[Path, str]) -> None:
    feed = make_feed(shared_log[0])
    app = ReplayApp(feed, refresh_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        behind = app.screen
        type_at_once(app, ["g", *TIME, "enter"])
        await until(pilot, lambda: feed.shown != 0.0, what="the replay to go to the time typed")
        assert feed.shown == 90.0
        await until(pilot, lambda: app.screen is behind, what="the prompt to close")
        assert feed.clock.playing is False  # nothing typed reached the replay behind


async def test_a_time_reaches_the_prompt_while_it_mounts_slowly(
    shared_log: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded app: the prompt takes a while to be ready; what is typed meanwhile is kept, in order."""
    original = TypedAheadPrompt.on_mount

    async def slow_mount(self: TypedAheadPrompt[Any]) -> None:
        await asyncio.sleep(0.4)  # other work runs meanwhile: the keys pile up
        original(self)

    monkeypatch.setattr(TypedAheadPrompt, "on_mount", slow_mount)
    feed = make_feed(shared_log[0])
    app = ReplayApp(feed, refresh_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        type_at_once(app, ["g", "1"])
        await asyncio.sleep(0.1)
        type_at_once(app, ["colon", "3", "1"])
        await asyncio.sleep(0.1)
        type_at_once(app, ["backspace", "0", "enter"])
        await until(pilot, lambda: feed.shown != 0.0, what="the replay to go to the time typed")
        assert feed.shown == 90.0
        await until(pilot, lambda: not isinstance(app.screen, GotoPrompt), what="the prompt to close")


async def test_escape_typed_right_after_a_go_to_never_blanks_the_replay(
    shared_log: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`g25%⏎` then escape in one burst on a slowed loop: the replay goes to 25 % and its screen stays. Each
    burst goes to a new place on the same app, so each one is seen to have gone where it was typed."""
    slow_frames(monkeypatch)
    feed = make_feed(shared_log[0])
    app = ReplayApp(feed, refresh_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        behind = app.screen
        depth = len(app.screen_stack)
        delivered = 0

        async def settled(typed: int) -> None:
            await until(pilot, lambda: app.keys.delivered >= typed and app.keys.idle, 60, "the keys to be delivered")
            await pilot.pause()

        for percent, after in (("25", ["escape"]), ("50", ["escape", "escape"]), ("75", ["g", "1", "0", "escape"])):
            keys = ["g", *percent, "percent_sign", "enter", *after]
            type_at_once(app, keys)
            delivered += len(keys)
            await settled(delivered)
            assert feed.shown == pytest.approx(feed.clock.end * int(percent) / 100, abs=1.0), after
            assert app.screen is behind and len(app.screen_stack) == depth
