"""A main-screen panel has one home, `console/headless/panels/<panel>.py`: its view, the function building it, its
drawing, and as data its help line (`HELP`) and the widget showing it (`WIDGET`). These fail when the pieces drift
apart: a panel module the registry forgets, a panel on the screen that no module claims (or the other way round),
or a help screen that no longer describes the panels there are."""

from __future__ import annotations

import pkgutil

import pytest
from console_helpers import SIZE, RecordingControls, ready, sample_app

from mcpwatch.console.headless import panels
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.widgets import Panel, ScrollPanel, WindowTable

from pilot_tools import until


def test_every_panel_module_is_in_the_registry_and_says_its_key_and_widget() -> None:
    modules = {info.name for info in pkgutil.iter_modules(panels.__path__)}
    registered = {panel.__name__.rsplit(".", 1)[1] for panel in panels.MAIN}
    assert modules == registered
    for panel in panels.MAIN:
        assert hasattr(panel, "HELP") and hasattr(panel, "WIDGET"), panel.__name__
    assert len(panels.help_rows()) >= 12  # the README's list of panels, each described


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_main_screen_places_the_registered_panels_and_help_describes_them() -> None:
    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        claimed = {panel.WIDGET for panel in panels.MAIN if panel.WIDGET is not None}
        for widget in claimed:
            assert screen.query(f"#{widget}"), f"no #{widget} on the main screen"
        placed = {w.id for w in screen.query("*") if isinstance(w, Panel | ScrollPanel | WindowTable)}
        assert placed <= claimed, f"panels on the screen that no panel module claims: {placed - claimed}"
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help screen")
        text = " ".join(app.screen.query_one("#help-text").plain.split())  # as read, whatever the wrapping
        for name, what in panels.help_rows():
            assert f"{name} {what}" in text, name
