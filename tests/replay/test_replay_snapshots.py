"""Snapshot tests of the replay console: a fixed log, a paused clock at a fixed time, UTC, no animations, no cursor
blink. Regenerate with `pytest tests/replay/test_replay_snapshots.py --snapshot-update`, then look at the SVGs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from replay_helpers import make_feed, ready
from textual.widgets import Input

from mcpwatch.replay.app import GotoPrompt, ReplayApp

SIZE = (150, 44)


pytestmark = pytest.mark.usefixtures("utc")  # wall-clock times on screen are local


def _at_a_deadline(path: Path, theme: str = "mcpwatch-dark") -> ReplayApp:
    """Paused five seconds after the recording's second deadline: a tombstone, calls in flight, errors."""
    feed = make_feed(path)
    deadline = [m for m in feed.markers() if m.kind == "deadline"][1]
    assert feed.seek(deadline.mono + 5.0)
    return ReplayApp(feed, theme=theme)


async def _settle(pilot: Any) -> None:
    await ready(pilot)
    for widget in pilot.app.screen.query(Input):
        widget.cursor_blink = False
    await pilot.pause(0.3)  # the tables rebuild at most five times a second


@pytest.mark.slow
@pytest.mark.parametrize("theme", ["mcpwatch-dark", "mcpwatch-light"])
def test_replay_main_screen(snap_compare: Any, shared_log: tuple[Path, str], theme: str) -> None:
    assert snap_compare(_at_a_deadline(shared_log[0], theme), terminal_size=SIZE, run_before=_settle)


def test_replay_main_screen_80x24(snap_compare: Any, shared_log: tuple[Path, str]) -> None:
    """Stacked panels, a three-line timeline bar with the counts, and the replay keys in the footer."""
    assert snap_compare(_at_a_deadline(shared_log[0]), terminal_size=(80, 24), run_before=_settle)


@pytest.mark.slow
def test_goto_dialog_explains_a_bad_time(snap_compare: Any, shared_log: tuple[Path, str]) -> None:
    async def bad_time(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("g")
        while not isinstance(pilot.app.screen, GotoPrompt):
            await pilot.pause(0.02)
        box = pilot.app.screen.query_one(Input)
        box.cursor_blink = False
        box.value = "25:00:00"
        await pilot.press("enter")
        await pilot.pause(0.1)

    assert snap_compare(_at_a_deadline(shared_log[0]), terminal_size=SIZE, run_before=bad_time)


@pytest.mark.slow
def test_replay_help(snap_compare: Any, shared_log: tuple[Path, str]) -> None:
    async def help_open(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)

    assert snap_compare(_at_a_deadline(shared_log[0]), terminal_size=SIZE, run_before=help_open)
