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

from pilot_tools import type_at_once, until

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("opening", "typed", "expected"),
    [
        ("m", ["1", "2", "full_stop", "5"], ("set_margin", 12.5)),
        ("m", ["2", "9", "full_stop", "9", "9"], ("set_margin", 29.99)),
        ("t", ["4", "5", "full_stop", "5"], ("set_host_timeout", 45.5)),
        # `p` would pause the screen behind: typed into the prompt, backspace takes it out again
        ("d", ["3", "p", "backspace", "5"], ("set_deadline", 35.0)),
    ],
)
async def test_keys_typed_faster_than_the_prompt_mounts_all_reach_it(
    opening: str, typed: list[str], expected: tuple[str, float]
) -> None:
    controls = RecordingControls()
    app = sample_app(controls=controls)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        behind = app.screen
        assert isinstance(behind, MainScreen)
        type_at_once(app, [opening, *typed, "enter"])
        await until(pilot, lambda: controls.calls, what="the value to be sent")
        assert controls.calls == [expected]
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
