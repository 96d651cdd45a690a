"""Snapshot tests (pytest-textual-snapshot): fixed events, a fixed `now`, UTC, no animations, no cursor blink.

Regenerate with `pytest tests/console/test_console_snapshots.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from console_helpers import RecordingControls, generic_session, sample_app
from textual.widgets import Input

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.source import FeedStatus, Target
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.widgets.table import WindowTable

SIZE = (150, 44)


pytestmark = pytest.mark.usefixtures("utc")  # wall-clock times on screen are local


async def _settle(pilot: Any) -> None:
    app = pilot.app
    while not (isinstance(app.screen, MainScreen) and app.screen.last_view is not None):
        await pilot.pause(0.02)
    for widget in app.screen.query(Input):
        widget.cursor_blink = False
    # Tables size their columns once they know their width, a frame or two after the first, and rebuild at most
    # every WindowTable.MIN_INTERVAL_S: wait until two frames further apart than that agree, so the snapshot is the
    # settled screen and not a passing one (50 ms apart, a table's last column was a cell wider in some runs).
    previous = None
    for _ in range(40):
        await pilot.pause(WindowTable.MIN_INTERVAL_S + 0.05)
        current = app.export_screenshot()
        if current == previous:
            break
        previous = current


@pytest.mark.parametrize("theme", ["mcpwatch-dark", "mcpwatch-light", "mcpwatch-high-contrast"])
def test_main_screen(snap_compare: Any, theme: str) -> None:
    assert snap_compare(sample_app(controls=RecordingControls(), theme=theme), terminal_size=SIZE, run_before=_settle)


def test_main_screen_small_terminal(snap_compare: Any) -> None:
    assert snap_compare(sample_app(controls=RecordingControls()), terminal_size=(100, 30), run_before=_settle)


def test_main_screen_80x24(snap_compare: Any) -> None:
    """The smallest common terminal: panels stacked, nothing cut to nothing, quit and help in the footer."""
    assert snap_compare(sample_app(controls=RecordingControls()), terminal_size=(80, 24), run_before=_settle)


def test_detail_screen_80x24(snap_compare: Any) -> None:
    """One column: the request, then its timeline (not pushed off screen by arguments and result)."""

    async def open_detail(pilot: Any) -> None:
        await _settle(pilot)
        pilot.app.screen.open_request("20")
        await pilot.pause(0.2)

    assert snap_compare(sample_app(controls=RecordingControls()), terminal_size=(80, 24), run_before=open_detail)


def test_detail_screen(snap_compare: Any) -> None:
    async def open_detail(pilot: Any) -> None:
        await _settle(pilot)
        pilot.app.screen.open_request("20")  # deadline, partial result, tombstone, council models
        await pilot.pause(0.2)

    assert snap_compare(sample_app(controls=RecordingControls()), terminal_size=SIZE, run_before=open_detail)


def test_disconnected_state(snap_compare: Any) -> None:
    status = FeedStatus("disconnected", "disconnected — retrying in 3s: wrapper 'council' is not running")
    app = sample_app(controls=RecordingControls(), status=status)
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


@pytest.mark.slow
def test_margin_prompt_explains_a_bad_value(snap_compare: Any) -> None:
    async def bad_margin(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("m")
        await pilot.pause(0.1)
        box = pilot.app.screen.query_one(Input)
        box.cursor_blink = False
        box.value = "1e309"
        await pilot.press("enter")
        await pilot.pause(0.1)

    assert snap_compare(sample_app(controls=RecordingControls()), terminal_size=SIZE, run_before=bad_margin)


def test_no_wrapper_screen(snap_compare: Any) -> None:
    app = ConsoleApp(target=Target(), registry_dir=Path("/nonexistent/mcpwatch-snapshot/wrappers"))  # shown: fixed

    async def wait(pilot: Any) -> None:
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 30), run_before=wait)


SIZES = [(80, 24), (120, 40), (200, 60)]


def _size_id(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
def test_council_main_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    """A council: calls next to be cut first with their time left, the council panels, tombstones live first."""
    assert snap_compare(sample_app(controls=RecordingControls()), terminal_size=size, run_before=_settle)


def _generic_app() -> ConsoleApp:
    from mcpwatch.events import Kind

    f, events = generic_session(24)
    for rid, start, budget, tool in (("90", 40.0, 110.0, "search"), ("91", 70.0, 30.0, "read_file")):
        events.append(
            f.make(Kind.REQUEST_START, start, request_id=rid, tool=tool, method="tools/call", budget_s=budget)
        )
    events.append(
        f.make(
            Kind.UPSTREAM_STATE,
            60.0,
            state="backoff",
            generation=1,
            exit_code=137,
            stderr_tail=["Killed"],
            retry_in_s=0.5,
        )
    )
    events.append(f.make(Kind.UPSTREAM_STATE, 61.0, state="ready", generation=2))
    return sample_app(events=events, now=96.0, controls=RecordingControls())


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
def test_generic_server_main_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    """A server that is not a council: per-tool calls, p50/p95, error and deadline rates in the council's place."""
    assert snap_compare(_generic_app(), terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
def test_events_view(snap_compare: Any, size: tuple[int, int]) -> None:
    async def open_events(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("e")
        await pilot.pause(0.3)

    assert snap_compare(_generic_app(), terminal_size=size, run_before=open_events)
