"""The live path against the operator contract double over loopback HTTP: feed, seeding, reconnects, discovery."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from console_helpers import SIZE
from operator_double import OperatorContractDouble
from textual.app import App
from textual.widgets import Input

from mcpwatch import registry
from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.source import LiveFeed, Locator, Target
from mcpwatch.console.screens.choose import ChooseWrapperScreen
from mcpwatch.console.screens.empty import NoWrapperScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.screens.modals import SecondsPrompt
from mcpwatch.events import Kind

from pilot_tools import current, screen_text, until
from waiting import patience

pytestmark = pytest.mark.anyio

FAST = {"backoff_s": (0.1, 0.2), "wait_ms": 200}


def _feed(directory: Path, selector: str | None = "council", **kwargs: object) -> LiveFeed:
    return LiveFeed(Locator(Target(selector=selector), directory), **{**FAST, **kwargs})  # type: ignore[arg-type]


def _pump_until(feed: LiveFeed, model: ConsoleModel, condition, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + patience(timeout)
    while not condition():
        feed.pump(model)
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; feed says {feed.status()}")
        time.sleep(0.02)


def test_live_feed_follows_the_event_stream(double: OperatorContractDouble, tmp_path: Path) -> None:
    double.register(tmp_path)
    feed = _feed(tmp_path)
    model = ConsoleModel()
    feed.start()
    try:
        _pump_until(feed, model, lambda: feed.status().state == "live" and model.saw_session_start)
        double.emit(Kind.REQUEST_START, request_id="9", tool="slow", method="tools/call", budget_s=50.0)
        _pump_until(feed, model, lambda: model.is_in_flight("9"))
        view = model.view(feed.now_mono(model))
        assert view.header.name == "council" and view.in_flight[0].budget_s == 50.0
        assert 0 <= view.in_flight[0].elapsed_s < patience(5)  # live time maps the wall clock onto session time
    finally:
        feed.stop()


def test_attaching_mid_session_seeds_from_status(tmp_path: Path) -> None:
    double = OperatorContractDouble(with_session_start=False).start()  # the ring no longer has session_start
    try:
        double.emit(Kind.REQUEST_START, mono=double.now_mono() - 30, request_id="7", tool="t", budget_s=100.0)
        double.register(tmp_path)
        feed = _feed(tmp_path)
        model = ConsoleModel()
        feed.start()
        try:
            _pump_until(feed, model, lambda: model.view(0).header.name == "council")
            view = model.view(feed.now_mono(model))
            assert view.deadline.budget_s == 110.0  # from status(), since no event carried it
            assert [r.request_id for r in view.in_flight] == ["7"]
        finally:
            feed.stop()
    finally:
        double.stop()


def test_wrapper_going_away_is_shown_and_a_new_one_is_followed(tmp_path: Path) -> None:
    first = OperatorContractDouble(session_id="first").start()
    first.register(tmp_path)
    feed = _feed(tmp_path)
    model = ConsoleModel()
    feed.start()
    try:
        first.emit(Kind.WARNING, message="from the first")
        _pump_until(feed, model, lambda: model.view(0).warnings)
        first.stop()
        registry.unregister(first.pid, tmp_path)
        _pump_until(feed, model, lambda: feed.status().state == "disconnected")
        frozen = feed.now_mono(model)
        assert "retrying" in feed.status().text
        assert model.view(frozen).warnings[0].message == "from the first"  # the last state stays
        second = OperatorContractDouble(session_id="second").start()  # restarted under the same name
        try:
            second.emit(Kind.WARNING, message="from the second")
            second.register(tmp_path)
            _pump_until(feed, model, lambda: model.session_id == "second" and model.view(0).warnings)
            assert feed.status().state == "live"
            assert [w.message for w in model.view(0).warnings] == ["from the second"]
        finally:
            second.stop()
    finally:
        feed.stop()
        first.stop()


@pytest.mark.slow
async def test_app_sets_margin_at_the_wrapper_and_shows_it(double: OperatorContractDouble, tmp_path: Path) -> None:
    double.register(tmp_path)
    app = ConsoleApp(target=Target(selector="council"), registry_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MainScreen) and "● live" in screen_text(app), what="live")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt))
        app.screen.query_one("Input", Input).value = "-3"
        await pilot.press("enter")
        await pilot.pause()
        assert double.deadline["margin_s"] == 10.0  # refused before sending
        app.screen.query_one("Input", Input).value = "25"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the prompt to close")
        assert double.deadline["margin_s"] == 25.0
        await until(pilot, lambda: _margin_shown(app, "25s"), what="the new margin on screen")
        await pilot.press("h")
        await until(pilot, lambda: "Tier budgets vs 95s" in screen_text(app), what="tiers after a health check")


@pytest.mark.slow
async def test_no_wrapper_screen_notices_when_one_appears(tmp_path: Path) -> None:
    app = ConsoleApp(target=Target(), registry_dir=tmp_path, discover_every_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, NoWrapperScreen))
        assert "mcpwatch wrap --" in screen_text(app) or app.screen.query_one("#empty-text")
        server = OperatorContractDouble().start()
        try:
            server.register(tmp_path)
            await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen")
            await until(pilot, lambda: "● live" in screen_text(app), what="live")
        finally:
            server.stop()


@pytest.mark.slow
async def test_several_wrappers_are_listed_and_one_can_be_watched(tmp_path: Path) -> None:
    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    doubles = [OperatorContractDouble(name=f"w{i}", pid=p.pid).start() for i, p in enumerate(sleepers)]
    try:
        for d in doubles:
            d.register(tmp_path)
        app = ConsoleApp(target=Target(), registry_dir=tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, ChooseWrapperScreen))
            chooser = current(app, ChooseWrapperScreen)
            await until(pilot, lambda: len(chooser.summaries) == 2, what="live summaries")
            assert "2 wrappers are running" in screen_text(app)
            await pilot.press("down", "enter")
            await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen")
            await until(pilot, lambda: "w1 pid" in screen_text(app), what="the second wrapper")
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is chooser, what="back to the list")
    finally:
        for d in doubles:
            d.stop()
        for p in sleepers:
            p.kill()
            p.wait()


def _margin_shown(app: App[Any], margin: str) -> bool:
    """The deadline panel's "host, margin" line shows this margin."""
    return re.search(rf"host, margin +\S+, {margin}\b", screen_text(app)) is not None
