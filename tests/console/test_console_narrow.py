"""Narrow terminals: the main screen's column headers and the Deadline panel's words are whole at 80 and 120
columns, never cut mid-word (`mess`, `margin by op…`). The screen is read as drawn, cell by cell."""

from __future__ import annotations

from typing import Any

import pytest
from console_helpers import RecordingControls, sample_app

from mcpwatch.console.screens.main import MainScreen
from mcpwatch.events import Kind
from mcpwatch.testing.sample import EventFactory, deadline_block, sample_session

from pilot_tools import until

pytestmark = pytest.mark.anyio


def drawn(app: Any) -> list[str]:
    """The screen as a user sees it: one string per terminal row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def box(lines: list[str], title: str) -> list[str]:
    """The rows of the bordered panel whose top border starts with `title`, from its left edge to its own right
    border (panels sit side by side)."""
    for top, line in enumerate(lines):
        at = line.find(f"╭─ {title}")
        if at < 0:
            continue
        end = line.index("╮", at)
        rows: list[str] = []
        for row in lines[top + 1 :]:
            if row[at] == "╰":
                return rows
            rows.append(row[at + 1 : end])
        return rows
    raise AssertionError(f"no {title!r} panel on screen:\n" + "\n".join(lines))


async def _settled(pilot: Any) -> list[str]:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.last_view is not None)
    previous: list[str] = []
    for _ in range(40):  # tables size their columns a frame or two after the first
        await pilot.pause(0.05)
        current = drawn(app)
        if current == previous:
            break
        previous = current
    return previous


@pytest.mark.parametrize("width", [80, 120])
async def test_in_flights_header_is_whole_at_80_and_120_columns(width: int) -> None:
    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=(width, 40)) as pilot:
        lines = await _settled(pilot)
        header = box(lines, "In flight")[0].split()
        whole = ["id", "tool", "left", "budget", "used", "progress", "message"]
        # beside the Council panel (120 columns) there is no room for a message: the column is left out, not cut
        assert header in (whole, whole[:-1]), lines
        if width == 80:
            assert header == whole, lines


@pytest.mark.parametrize("width", [80, 120])
async def test_the_deadline_panels_words_are_whole_after_an_operator_change(width: int) -> None:
    f = EventFactory()
    events = sample_session()
    for key, old, new, mono in (("margin_s", 15.0, 0.25, 300.0), ("host_timeout_s", 120.0, 3600.0, 301.0)):
        block = deadline_block(host=3600.0 if key == "host_timeout_s" else 120.0, margin=0.25) | {"source": "clamped"}
        events.append(f.make(Kind.CONFIG_CHANGE, mono, key=key, old=old, new=new, source="operator", deadline=block))
    app = sample_app(events=events, controls=RecordingControls())
    async with app.run_test(size=(width, 60)) as pilot:
        lines = await _settled(pilot)
        panel = "\n".join(box(lines, "Deadline"))
        assert "…" not in panel, panel
        assert "operator set host timeout" in " ".join(panel.split()), panel
        assert "1s at least" in panel and "3600s, 0.25s" in panel, panel


async def test_the_tools_panels_header_is_whole_words_at_80_columns() -> None:
    from test_console_snapshots import _generic_app

    async with _generic_app().run_test(size=(80, 40)) as pilot:
        lines = await _settled(pilot)
        assert box(lines, "Tools")[0].split() == ["tool", "calls", "p50", "p95", "err", "cut"], lines
