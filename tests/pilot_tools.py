"""Pilot helpers shared by the console's and replay's app tests: wait for a condition, read the screen as text."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from textual import events
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

from waiting import patience

ScreenT = TypeVar("ScreenT", bound=Screen[Any])


def current(app: App[Any], kind: type[ScreenT]) -> ScreenT:
    """The app's current screen, which the test expects to be a `kind` (fails saying which screen it is if not)."""
    screen = app.screen
    assert isinstance(screen, kind), f"the current screen is a {type(screen).__name__}, not a {kind.__name__}"
    return screen


async def until(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
    """Let the app run until `condition()` holds (or fail saying what was awaited). `timeout` is what an idle machine
    needs with room; the bound scales with the load (waiting.patience), since it only catches a hang. Between looks
    the loop just sleeps: a `pilot.pause` would also wait on every widget and redraw the screen each time, which on a
    loaded machine (many looks) cost more than the test itself; the app's messages and timers run either way."""
    deadline = time.monotonic() + patience(timeout)
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.02)


def screen_text(app: App[Any]) -> str:
    """Everything the active screen shows, as plain text (for asserting what a user would read)."""
    from textual.widgets import DataTable

    from mcpwatch.console.widgets import Line

    parts: list[str] = []
    for widget in app.screen.query("*"):
        if isinstance(widget, Line):
            if widget.display:
                parts.append(widget.plain)
        elif isinstance(widget, DataTable):
            for row in range(widget.row_count):
                parts.append(" ".join(str(cell) for cell in widget.get_row_at(row)))
        title = getattr(widget, "border_title", None)
        if title:
            parts.append(str(title))
    return "\n".join(parts)


def slow_frames(monkeypatch: Any, seconds: float = 0.03) -> None:
    """Block the event loop for `seconds` on every layout and every frame drawn, as a loaded machine does: keys
    typed in one burst are then all read before the first has had its effect (a prompt mounted, a focus moved)."""
    from textual.screen import Screen

    for name in ("_compositor_refresh", "_refresh_layout"):
        original = getattr(Screen, name)

        def slowed(self: Screen[Any], *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            time.sleep(seconds)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Screen, name, slowed)


def type_at_once(app: App[Any], keys: list[str]) -> None:
    """Queue every key on the driver in one go, as a busy terminal delivers them: none waits for the previous."""
    chars = {
        "full_stop": ".",
        "colon": ":",
        ":": ":",
        "percent_sign": "%",
        "slash": "/",
        "space": " ",
        "enter": None,
        "backspace": None,
        "escape": None,
    }
    for key in keys:
        event = events.Key(key, chars.get(key, key))
        event.set_sender(app)
        assert app._driver is not None
        app._driver.send_message(event)


async def run_from_palette(pilot: Pilot[Any], search: str) -> None:
    """Open the command palette, type `search`, and run the command it then offers first — once it offers it: the
    palette gathers its matches a moment after each key (a fixed pause was too short on a loaded machine)."""
    from textual.command import CommandList, CommandPalette

    app = pilot.app
    await pilot.press("ctrl+p")
    await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the command palette")
    await pilot.press(*search)

    def offered_first() -> bool:
        options = app.screen.query_one(CommandList)
        if not options.option_count or options.highlighted != 0:
            return False
        hit = getattr(options.get_option_at_index(0), "hit", None)
        return hit is not None and search in str(hit.match_display)

    await until(pilot, offered_first, what=f"the palette to offer {search!r} first")
    await pilot.press("enter")
