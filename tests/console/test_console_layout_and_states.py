"""The console's layout and states, driven with a pilot: small terminals, the footer, banners, the empty screen's
polling and help, the filter's sparkline, the tool column, stale state after a disconnect, theme borders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from console_helpers import RecordingControls, footer_descriptions, ready, sample_app
from operator_double import OperatorContractDouble
from textual.app import App
from textual.color import Color
from textual.widgets import Footer

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.session import WatchSession
from mcpwatch.console.headless.source import FeedStatus, Target
from mcpwatch.console.headless.views import ViewState
from mcpwatch.console.screens.detail import RequestDetailScreen, result_title
from mcpwatch.console.screens.empty import NoWrapperScreen
from mcpwatch.console.screens.help import HelpScreen
from mcpwatch.console.screens.main import MainScreen
from mcpwatch.console.widgets import Line, Panel, ScrollPanel, WindowTable
from mcpwatch.events import Kind
from mcpwatch.testing.feed import StaticFeed
from mcpwatch.testing.sample import SAMPLE_NOW, EventFactory, sample_session, session_start

from pilot_tools import current, screen_text, until

pytestmark = pytest.mark.anyio

SMALL = (80, 24)


def _footer_keys(app: ConsoleApp) -> list[str]:
    """The keys the footer shows (the footer draws `active_bindings`, in order)."""
    return [a.binding.key for a in app.screen.active_bindings.values() if a.binding.show]


@pytest.mark.slow
async def test_small_terminal_keeps_every_number_the_keys_that_matter_and_the_detail_timeline() -> None:
    """80×24, one app run: the panels stack (the body scrolls) instead of cutting the counters, tiers and in-flight
    columns; the keys that matter at 3 a.m. stay in the footer: quit, help (then "Keys": the others are there),
    open, filter, events, margin, deadline, cancel; a request's detail shows its timeline right after the request."""
    from mcpwatch.console.screens.modals import SecondsPrompt

    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=SMALL) as pilot:
        await ready(pilot)
        await pilot.pause(0.3)
        screen = app.screen
        assert screen.has_class("-narrow")
        counters = screen.query_one("#counters", Panel).plain
        for label, number in (("requests", "12"), ("ok", "7"), ("errors", "1"), ("invalidate", "2")):
            assert label in counters and number in counters
        tiers = screen.query_one("#tiers", Panel).plain
        assert "600s" in tiers and tiers.count("⚠") == 2
        # In flight and requests use the full width: progress and message columns are there.
        inflight = screen.query_one("#inflight", WindowTable)
        assert inflight.size.width >= 70
        assert "40/100" in screen_text(app)
        tombstones = screen.query_one("#tombstones", ScrollPanel).plain
        assert "#20" in tombstones and "#21" in tombstones
        assert "tasks.update → tasks.*, sprints.*" in screen.query_one("#invalidations", ScrollPanel).plain
        body = screen.query_one("#body")
        assert body.virtual_size.height > body.size.height  # the rest is a scroll away

        # The footer keeps quit, help and the operator keys; the least important give way but still work.
        keys = _footer_keys(app)
        assert {"q", "question_mark", "enter", "slash", "e", "m", "d", "c"} <= set(keys)
        assert "t" not in keys and "p" not in keys  # the least important give way
        await pilot.press("t")  # ...but still work
        await until(pilot, lambda: isinstance(app.screen, SecondsPrompt), what="the host timeout prompt")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the prompt to close")

        # The detail screen shows the timeline right after the request.
        current(app, MainScreen).open_request("20")
        await until(pilot, lambda: isinstance(app.screen, RequestDetailScreen))
        await pilot.pause(0.2)
        timeline = app.screen.query_one("#timeline", Panel)
        assert timeline.region.y < SMALL[1] - 4  # on screen, not under the arguments and result
        assert app.screen.query_one("#detail-council-below", Panel).display
        assert "Timeline" in (timeline.border_title or "")


@pytest.mark.slow
async def test_wide_footer_shows_host_timeout_and_deadline_and_the_sparkline_follows_the_filter() -> None:
    app = sample_app(controls=RecordingControls())
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        keys = _footer_keys(app)
        assert {"h", "m", "c", "t", "d", "q", "question_mark"} <= set(keys)
        footer = app.screen.query_one(Footer)
        await pilot.pause(0.1)
        assert "Timeout" in str(footer_descriptions(footer))

        # The sparkline follows the filter.
        assert "last 9 calls" in app.screen.query_one("#latency", Line).plain
        await pilot.press("slash", *"tasks.update", "enter")
        await pilot.pause(0.3)
        latency = app.screen.query_one("#latency", Line).plain
        assert "last 2 matching calls" in latency and "max 2.8s" in latency


@pytest.mark.slow
async def test_a_long_banner_wraps_rather_than_losing_its_end() -> None:
    message = (
        "disconnected — retrying in 5s: the wrapper at http://127.0.0.1:43111/mcp refused the operator token (HTTP 401)"
    )
    app = sample_app(controls=RecordingControls(), status=FeedStatus("disconnected", message))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.pause(0.1)
        banner = app.screen.query_one("#banner", Line)
        assert banner.size.height >= 2
        assert "token (HTTP 401)" in " ".join(banner.plain.split())


@pytest.mark.slow
async def test_disconnected_header_dims_the_upstream_and_time_stands_still() -> None:
    feed = StaticFeed(sample_session(), SAMPLE_NOW)
    session = WatchSession(feed, RecordingControls())
    app = ConsoleApp(session=session)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        assert "upstream ● ready" in screen_text(app)
        elapsed = drawn_view(app).in_flight[0].elapsed_s
        feed.set_status(FeedStatus("disconnected", "disconnected — retrying in 1s: connection refused"))
        feed.set_now(SAMPLE_NOW + 60)  # the wall clock moves on; nothing is known about the wrapper since
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "upstream ● ready" not in text and "ready? (last known)" in text
        assert drawn_view(app).in_flight[0].elapsed_s == elapsed
        feed.set_status(FeedStatus("live", "live"))
        await pilot.pause(0.3)
        assert drawn_view(app).in_flight[0].elapsed_s == elapsed + 60


def drawn_view(app: App[Any]) -> ViewState:
    """The main screen's last drawn view (the test has waited for a draw)."""
    view = current(app, MainScreen).last_view
    assert view is not None, "the main screen has not drawn yet"
    return view


def test_a_session_holds_its_time_while_disconnected() -> None:
    feed = StaticFeed([], 10.0)
    session = WatchSession(feed)
    assert session.now() == 10.0
    feed.set_status(FeedStatus("disconnected", "gone"))
    feed.set_now(99.0)
    assert session.now() == 10.0
    feed.set_status(FeedStatus("live", "live"))
    assert session.now() == 99.0


@pytest.mark.slow
async def test_an_ended_session_marks_its_calls_unfinished() -> None:
    f = EventFactory()
    events = [
        session_start(f),
        f.make(Kind.UPSTREAM_STATE, 0.4, state="ready", generation=1),
        f.make(Kind.REQUEST_START, 10.0, request_id="5", tool="consult_council", method="tools/call", budget_s=50.0),
        f.make(Kind.SESSION_END, 20.0, reason="received SIGTERM"),
    ]
    app = sample_app(events=events, now=100.0)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "ended: received SIGTERM" in text and "upstream ● closed" in text and "● ready" not in text
        assert "unfinished: the session ended" in text
        assert "⊘ ended" in text and "10s/50s" in text


@pytest.mark.slow
async def test_the_tool_column_widens_when_no_request_has_a_note() -> None:
    f = EventFactory()
    events = [session_start(f)]
    for i, tool in enumerate(("council.models.enable", "council.chairman.set")):
        rid = str(i + 1)
        events.append(f.make(Kind.REQUEST_START, i, request_id=rid, tool=tool, method="tools/call", budget_s=9.0))
        events.append(f.make(Kind.REQUEST_END, i + 0.5, request_id=rid, outcome="ok", duration_s=0.5))
    app = sample_app(events=events, now=5.0)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        await pilot.pause(0.3)
        assert "council.models.enable" in screen_text(app)
    events.append(f.make(Kind.REQUEST_START, 3, request_id="3", tool="council.models.disable", method="tools/call"))
    events.append(f.make(Kind.REQUEST_END, 3.5, request_id="3", outcome="tool_error", error="no such model"))
    app = sample_app(events=events, now=5.0)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        await pilot.pause(0.3)
        text = screen_text(app)
        # The column fits the longest name while it takes at most a quarter of the table: nothing is cut here.
        assert "council.models.disable" in text and "no such model" in text


@pytest.mark.slow
async def test_health_check_not_ready_is_not_reported_as_ok() -> None:
    class NotReady(RecordingControls):
        async def health_check(self) -> dict:
            self.calls.append(("health_check", None))
            return {"ok": True, "ping_ms": 2.9, "error": "the upstream has not been initialised by a host yet"}

    app = sample_app(controls=NotReady())
    notes: list[str] = []
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await ready(pilot)
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("h")
        await until(pilot, lambda: any("not ready" in n for n in notes), what="a not-ready notification")
        assert not any("health check ok" in n for n in notes)


@pytest.mark.slow
async def test_the_empty_screen_keeps_polling_under_help_and_the_palette(tmp_path: Path) -> None:
    app = ConsoleApp(target=Target(), registry_dir=tmp_path, discover_every_s=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, NoWrapperScreen))
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_text = app.screen.query_one("#help-text", Line).plain
        assert "this is a recording" not in help_text and "once a wrapper is being watched" in help_text
        await pilot.pause(0.3)  # a few polls with the help open
        server = OperatorContractDouble().start()
        try:
            server.register(tmp_path)
            await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen, help open")
            await until(pilot, lambda: "● live" in screen_text(app), what="live")
        finally:
            server.stop()


@pytest.mark.slow
async def test_the_empty_screen_keeps_polling_under_the_palette(tmp_path: Path) -> None:
    app = ConsoleApp(target=Target(), registry_dir=tmp_path, discover_every_s=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, NoWrapperScreen))
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette", what="the palette")
        await pilot.pause(0.3)
        server = OperatorContractDouble().start()
        try:
            server.register(tmp_path)
            await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen, palette open")
            # leave only once it is drawn: an app closed while the screen mounts has no children to find
            await until(pilot, lambda: bool(app.screen.query("#requests")), what="the main screen drawn")
            await pilot.pause()
        finally:
            server.stop()


def test_result_titles_say_whose_answer_it_is() -> None:
    assert result_title("deadline", True) == "Partial result sent to the host"
    assert result_title("cancelled", False) == "Result sent to the host"
    assert result_title("ok", False) == "Result"
    assert result_title("tool_error", False) == "Result (tool error)"


def _contrast(a: str, b: str) -> float:
    def lum(c: Color) -> float:
        def ch(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b)

    la, lb = sorted((lum(Color.parse(a)), lum(Color.parse(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("theme", ["mcpwatch-dark", "mcpwatch-light", "mcpwatch-high-contrast"])
async def test_panel_borders_stand_out_from_the_surface(theme: str) -> None:
    app = sample_app(theme=theme)
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        variables = app.theme_variables
        panel = app.screen.query_one("#deadline", Panel)
        border = panel.styles.border_top[1].hex
        assert border == Color.parse(variables["panel-border"]).hex
        assert _contrast(border, variables["surface"]) >= 1.8, (border, variables["surface"])
        assert _contrast(border, variables["background"]) >= 1.8
