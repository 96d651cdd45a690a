"""The seconds prompts take every key typed after the key that opened them, however fast or loaded.

Keys are sent straight to the app's driver, all at once, without waiting for the screen to mount — as a
terminal delivers them when the machine is busy. On a slow mount the digits must still reach the prompt, in
order, and never the screen behind it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from console_helpers import SIZE, RecordingControls, ready, sample_app

from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.screens.modals import TypedAheadPrompt

from pilot_tools import slow_frames, type_at_once, until

pytestmark = pytest.mark.anyio


# Each prompt in turn on one app: every value is sent whole, and the prompt closes onto the screen behind.
TYPED_AHEAD: list[tuple[str, list[str], tuple[str, float]]] = [
    ("m", ["1", "2", "full_stop", "5"], ("set_margin", 12.5)),
    ("m", ["2", "9", "full_stop", "9", "9"], ("set_margin", 29.99)),
    ("t", ["4", "5", "full_stop", "5"], ("set_host_timeout", 45.5)),
    # `p` would pause the screen behind: typed into the prompt, backspace takes it out again
    ("d", ["3", "p", "backspace", "5"], ("set_deadline", 35.0)),
]


async def test_keys_typed_faster_than_the_prompt_mounts_all_reach_it() -> None:
    controls = RecordingControls()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        behind = app.screen
        assert isinstance(behind, MainScreen)
        for opening, typed, expected in TYPED_AHEAD:
            controls.calls.clear()
            type_at_once(app, [opening, *typed, "enter"])
            await until(pilot, lambda: controls.calls, what="the value to be sent")
            assert controls.calls == [expected], opening
            await until(pilot, lambda: app.screen is behind, what="the prompt to close")
            assert behind.session.paused is False  # nothing typed reached the screen behind


async def test_keys_reach_the_prompt_while_it_mounts_slowly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded app: the prompt takes a while to be ready; what is typed meanwhile is kept, in order."""
    original = TypedAheadPrompt.on_mount

    async def slow_mount(self: TypedAheadPrompt[Any]) -> None:
        await asyncio.sleep(0.4)  # other work runs meanwhile: the keys pile up
        original(self)

    monkeypatch.setattr(TypedAheadPrompt, "on_mount", slow_mount)
    controls = RecordingControls()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        behind = app.screen
        type_at_once(app, ["m", "1"])
        await asyncio.sleep(0.1)
        type_at_once(app, ["2", "p"])
        await asyncio.sleep(0.1)
        type_at_once(app, ["backspace", "full_stop", "5", "enter"])
        await until(pilot, lambda: controls.calls, what="the value to be sent")
        assert controls.calls == [("set_margin", 12.5)]
        assert isinstance(behind, MainScreen) and behind.session.paused is False


# -- bursts on a slowed loop: every key reaches what has focus once the keys before it have acted ----------------


async def settled(pilot: Any, app: Any, typed: int) -> None:
    """Every key typed has been delivered and has done what it does."""
    await until(pilot, lambda: app.keys.delivered >= typed and app.keys.idle, 60, "the keys to be delivered")
    await pilot.pause()


class SlowControls(RecordingControls):
    """The wrapper takes a while to answer a change (a loaded machine): keys typed meanwhile wait their turn."""

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return await super().set_margin(seconds)


@pytest.mark.parametrize("controls_type", [RecordingControls, SlowControls])
async def test_enter_then_the_next_prompt_in_one_burst_sets_both_and_escape_never_blanks_the_screen(
    monkeypatch: pytest.MonkeyPatch, controls_type: type[RecordingControls]
) -> None:
    """`m 11 ⏎ m 13 ⏎` typed at once: both margins set, in order (not `13m11` typed into the first prompt). Then, on
    the same app, `m 11 ⏎ m 13 esc` at once: the margin is 11, the second prompt is cancelled, the main screen
    stays, and more escapes close nothing beneath it."""
    slow_frames(monkeypatch)
    controls = controls_type()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        behind = app.screen
        depth = len(app.screen_stack)
        keys = ["m", "1", "1", "enter", "m", "1", "3", "enter"]
        type_at_once(app, keys)
        await settled(pilot, app, len(keys))
        assert controls.calls == [("set_margin", 11.0), ("set_margin", 13.0)]
        assert app.screen is behind

        controls.calls.clear()
        typed = len(keys)
        keys = ["m", "1", "1", "enter", "m", "1", "3", "escape"]
        type_at_once(app, keys)
        typed += len(keys)
        await settled(pilot, app, typed)
        assert controls.calls == [("set_margin", 11.0)]
        assert app.screen is behind and len(app.screen_stack) == depth
        type_at_once(app, ["escape", "escape"])  # more escapes close nothing beneath the main screen
        await settled(pilot, app, typed + 2)
        assert app.screen is behind and len(app.screen_stack) == depth


# the `t` of `took` is the filter's, never the host-timeout prompt's
FILTERS_TYPED: list[tuple[list[str], list[tuple[str, float]], str]] = [
    (["slash", "t", "o", "o", "k"], [], "took"),
    (["slash", "o", "u", "t", "c", "o", "m", "e", ":", "d"], [], "outcome:d"),
    (["slash", "t", "o", "o", "l", "enter", "m", "5", "enter"], [("set_margin", 5.0)], "tool"),
]


async def test_a_filter_typed_at_once_never_reaches_a_wrapper_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each filter in turn on one app, the filter cleared (as escape clears it) and the calls forgotten between."""
    slow_frames(monkeypatch)
    controls = RecordingControls()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        behind: MainScreen = screen  # narrowed once, for the checks in the loop below
        typed = 0
        for keys, calls, filter_text in FILTERS_TYPED:
            controls.calls.clear()
            behind.action_back()  # the filter emptied and closed, the rows focused: as a fresh screen has it
            await until(pilot, lambda: behind.filter_text == "", what="the filter cleared")
            type_at_once(app, keys)
            typed += len(keys)
            await settled(pilot, app, typed)
            assert controls.calls == calls, keys
            assert behind.filter_text == filter_text
            assert app.screen is behind
